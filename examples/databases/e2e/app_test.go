package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/examples/databases"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// cluster is the package's one API server.
var cluster = kubetest.NewShared()

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(cluster.Wrap(m), kubetest.GoleakOptions()...)
}

// patience bounds every wait for the controller.
const patience = 30 * time.Second

// scenarioMember is the baggage member the App's failure injection reads.
const scenarioMember = "acme.fault"

// run is one test's controller and its clients: the App, limited to the
// test's namespace, and the test's own clients, as the cluster's admin.
type run struct {
	ns        string
	app       *apptest.App
	kube      kubernetes.Interface
	databases dynamic.ResourceInterface
}

// start installs the CRD and runs databases.Init as an App against the
// shared cluster, on the real network (the API server's and PostgreSQL's),
// connecting with a kubeconfig file on a test Host, limited to a namespace
// of the test's own, where it trusts failure scenarios. opts are added to
// the App's.
func start(t *testing.T, opts ...app.Option) *run {
	t.Helper()
	return startWith(t, nil, opts...)
}

// startWith is start with env added to the App's environment.
func startWith(t *testing.T, env map[string]string, opts ...app.Option) *run {
	t.Helper()
	return startAs(t, nil, env, opts...)
}

// startAs is startWith whose App connects with the kubeconfig that
// kubeconfig returns for the test's namespace; nil is the cluster admin's.
func startAs(t *testing.T, kubeconfig func(c *kubetest.Cluster, ns string) []byte, env map[string]string, opts ...app.Option) *run {
	t.Helper()
	c := cluster.Cluster(t)
	crd, err := databases.Database.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	ns := c.Namespace(t)

	config := c.Kubeconfig()
	if kubeconfig != nil {
		config = kubeconfig(c, ns)
	}
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"kubeconfig": config}))
	vars := map[string]string{
		"CONTROLLER_NAME":      "databases-controller",
		"POD_NAMESPACE":        ns,
		"POD_NAME":             "databases-controller-0",
		"WATCH_NAMESPACE":      ns,
		"EXPERIMENT_NAMESPACE": ns,
		"DATABASES_KUBECONFIG": h.Path("kubeconfig"),
		"PROBE_ADDRESS":        "127.0.0.1:0",
	}
	for k, v := range env {
		vars[k] = v
	}
	a := apptest.Start(t, databases.Init,
		apptest.WithHost(h),
		apptest.WithEnv(vars),
		apptest.WithAppOptions(append([]app.Option{
			app.WithHost(app.Host{Network: app.OSHost().Network, FS: h.FS()}),
		}, opts...)...),
	)
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	return &run{ns: ns, app: a, kube: kc, databases: dyn.Resource(databases.Database.GVR()).Namespace(ns)}
}

// unique returns prefix with a random suffix, a name no other test uses.
func unique(prefix string) string {
	return prefix + "_" + strings.ToLower(rand.Text()[:10])
}

// create creates the Database name for a database of a unique name, with
// annotations, and returns its database's name. The test's cleanup drops
// the database and the role, whatever the controller left.
func (r *run) create(t *testing.T, name string, annotations map[string]string) string {
	t.Helper()
	database := unique(name)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": databases.Database.Group + "/" + databases.Database.Version,
		"kind":       databases.Database.Kind,
		"metadata":   map[string]any{"name": name, "namespace": r.ns},
		"spec":       map[string]any{"databaseName": database, "owner": database},
	}}
	u.SetAnnotations(annotations)
	_, err := r.databases.Create(t.Context(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		// The App first, if the test hasn't stopped it: a reconcile of
		// its, a retry say, could create the database again between the
		// two drops, and the role would then own it.
		r.app.Stop()
		ctx := context.Background()
		conn := connect(ctx, t, "postgres", "", "postgres")
		defer func() { require.NoError(t, conn.Close(ctx)) }()
		_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{database}.Sanitize()+" WITH (FORCE)")
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{database}.Sanitize())
		require.NoError(t, err)
	})
	return database
}

// get returns the Database name, and false once it is gone.
func (r *run) get(t *testing.T, name string) (databases.Object, bool) {
	t.Helper()
	u, err := r.databases.Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return databases.Object{}, false
	}
	require.NoError(t, err)
	var d databases.Object
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	return d, true
}

// ready returns the Database's Ready condition, or nil.
func ready(d databases.Object) *metav1.Condition {
	return meta.FindStatusCondition(d.Status.Conditions, databases.ConditionReady)
}

// Done is closed once the App has exited.
func (r *run) Done() <-chan struct{} { return r.app.Done() }

// Report describes the App for a failed wait: its exit, its records and
// its stderr.
func (r *run) Report() string { return wait.Report("the App", r.app, r.app.Telemetry()) }

// connect opens a connection to database at 127.0.0.1:5432 as user.
func connect(ctx context.Context, t *testing.T, user, password, database string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=5432 sslmode=disable user='%s' password='%s' dbname='%s'", user, password, database))
	require.NoError(t, err)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	return conn
}

// exists reports whether PostgreSQL has the database.
func exists(t *testing.T, database string) bool {
	t.Helper()
	ctx := t.Context()
	conn := connect(ctx, t, "postgres", "", "postgres")
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", database).Scan(&ok))
	return ok
}

func TestDatabase_is_provisioned_with_credentials_that_log_in_and_dropped_on_deletion(t *testing.T) {
	r := start(t)
	database := r.create(t, "orders", nil)

	wait.For(t, patience, func() bool {
		d, _ := r.get(t, "orders")
		c := ready(d)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation
	}, "the Database never became Ready", r)
	d, _ := r.get(t, "orders")
	require.Equal(t, databases.ReasonProvisioned, ready(d).Reason)
	require.Equal(t, databases.SecretName("orders"), d.Status.SecretName)
	require.Contains(t, d.Finalizers, databases.Finalizer)

	s, err := r.kube.CoreV1().Secrets(r.ns).Get(t.Context(), d.Status.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, metav1.IsControlledBy(s, &d.ObjectMeta), "the Database controls its Secret")
	require.Equal(t, database, string(s.Data[databases.SecretDatabase]))

	// The Secret's credentials log in, as an application's would.
	conn := connect(t.Context(), t, string(s.Data[databases.SecretUser]), string(s.Data[databases.SecretPassword]), string(s.Data[databases.SecretDatabase]))
	var user, db string
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT current_user, current_database()").Scan(&user, &db))
	require.NoError(t, conn.Close(t.Context()))
	require.Equal(t, database, user)
	require.Equal(t, database, db)

	require.NoError(t, r.databases.Delete(t.Context(), "orders", metav1.DeleteOptions{}))
	wait.For(t, patience, func() bool {
		_, ok := r.get(t, "orders")
		return !ok
	}, "the finalizer never let the Database go", r)
	require.False(t, exists(t, database), "the finalizer dropped the database")
}

// annotationValue returns the annotation that carries rules, as the tool
// that runs an experiment writes it.
func annotationValue(t *testing.T, codec fit.Encoder, rules ...fit.Rule) string {
	t.Helper()
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: rules})
	require.NoError(t, err)
	return baggage.FromContext(ctx).String()
}

func TestDatabase_is_not_Ready_while_a_scenario_aborts_the_Secret_s_apply(t *testing.T) {
	codec, err := jsonscenario.New(scenarioMember)
	require.NoError(t, err)
	r := start(t, app.WithFaults(fault.Settings{Decoder: codec}))
	value := annotationValue(t, codec, fit.Rule{Point: "kube:secrets:patch", Fault: fit.Fault{Abort: true}})
	database := r.create(t, "orders", map[string]string{databases.ScenarioAnnotation: value})

	wait.For(t, patience, func() bool {
		d, _ := r.get(t, "orders")
		c := ready(d)
		return c != nil && c.Reason == databases.ReasonSecretFailed
	}, "the Database never reported the failed apply", r)
	d, _ := r.get(t, "orders")
	require.Equal(t, metav1.ConditionFalse, ready(d).Status)
	require.True(t, exists(t, database), "PostgreSQL was provisioned; only the Secret's apply fails")
	_, err = r.kube.CoreV1().Secrets(r.ns).Get(t.Context(), databases.SecretName("orders"), metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the apply never left the process: %v", err)

	// Ending the experiment reconciles the Database at once, without it.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{databases.ScenarioAnnotation: nil}}})
	require.NoError(t, err)
	_, err = r.databases.Patch(t.Context(), "orders", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	wait.For(t, patience, func() bool {
		d, _ := r.get(t, "orders")
		c := ready(d)
		return c != nil && c.Status == metav1.ConditionTrue
	}, "the Database never recovered", r)
	s, err := r.kube.CoreV1().Secrets(r.ns).Get(t.Context(), databases.SecretName("orders"), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.SecretTypeOpaque, s.Type)
	require.NotContains(t, s.Annotations, databases.ScenarioAnnotation, "the reconcile that applied it carried no scenario")
}

package databases

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dial is the tests' network: the real one, where PostgreSQL runs.
func dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// localPostgres is the PostgreSQL the tests run against.
func localPostgres() Postgres {
	return Postgres{Host: "127.0.0.1", Port: 5432, User: "postgres", Database: "postgres", Dial: dial}
}

// unique returns prefix with a random suffix, a name no other test uses.
func unique(prefix string) string {
	return prefix + "_" + strings.ToLower(rand.Text()[:10])
}

// newDatabase returns a Database whose database and role are unique, and
// drops them when the test ends, whatever it left behind.
func newDatabase(t *testing.T) Object {
	t.Helper()
	d := Object{
		TypeMeta:   metav1.TypeMeta{APIVersion: "databases.example.com/v1alpha1", Kind: "Database"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", UID: types.UID(unique("uid")), Generation: 1},
		Spec:       DatabaseSpec{DatabaseName: unique("orders"), Owner: unique("orders_owner"), DeletionPolicy: Delete},
	}
	t.Cleanup(func() {
		cleanup(t, d.Spec.DatabaseName, d.Spec.Owner)
	})
	return d
}

// cleanup drops database and role as the administrator.
func cleanup(t *testing.T, database, role string) {
	t.Helper()
	ctx := context.Background()
	conn, err := localPostgres().connect(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{database}.Sanitize()+" WITH (FORCE)")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
	require.NoError(t, err)
}

// admin runs query as the administrator and returns its one row's one
// column.
func admin[T any](t *testing.T, query string, args ...any) T {
	t.Helper()
	ctx := t.Context()
	conn, err := localPostgres().connect(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	var v T
	require.NoError(t, conn.QueryRow(ctx, query, args...).Scan(&v))
	return v
}

// login connects to the Secret's database with the Secret's credentials,
// as an application would, and returns the role it is connected as.
func login(t *testing.T, data map[string][]byte) string {
	t.Helper()
	p := Postgres{
		Host: string(data[SecretHost]), Port: 5432,
		User: string(data[SecretUser]), Password: string(data[SecretPassword]),
		Database: string(data[SecretDatabase]), Dial: dial,
	}
	ctx := t.Context()
	conn, err := p.connect(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	var user string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_user").Scan(&user))
	return user
}

func ready(t *testing.T, st *DatabaseStatus) metav1.Condition {
	t.Helper()
	require.NotNil(t, st)
	c := meta.FindStatusCondition(st.Conditions, ConditionReady)
	require.NotNil(t, c)
	return *c
}

func TestReconcile_creates_the_role_the_database_and_the_Secret_and_keeps_the_password(t *testing.T) {
	kc := kubefake.NewClientset()
	r := Reconciler{Kube: kc, Postgres: localPostgres(), FieldManager: "databases-controller"}
	d := newDatabase(t)

	res, err := r.Reconcile(t.Context(), d)
	require.NoError(t, err)
	c := ready(t, res.Status)
	require.Equal(t, metav1.ConditionTrue, c.Status, c.Message)
	require.Equal(t, ReasonProvisioned, c.Reason)
	require.Equal(t, SecretName("orders"), res.Status.SecretName)
	require.Equal(t, int64(1), res.Status.ObservedGeneration)

	require.Equal(t, d.Spec.Owner, admin[string](t, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1", d.Spec.DatabaseName))

	s, err := kc.CoreV1().Secrets("shop").Get(t.Context(), SecretName("orders"), metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, metav1.IsControlledBy(s, &d.ObjectMeta), "the Database controls its Secret")
	require.Equal(t, corev1.SecretTypeOpaque, s.Type)
	require.Equal(t, "127.0.0.1", string(s.Data[SecretHost]))
	require.Equal(t, "5432", string(s.Data[SecretPort]))
	require.Equal(t, d.Spec.DatabaseName, string(s.Data[SecretDatabase]))
	require.Equal(t, d.Spec.Owner, string(s.Data[SecretUser]))
	password := string(s.Data[SecretPassword])
	require.Len(t, password, 26)
	require.Equal(t, d.Spec.Owner, login(t, s.Data))

	// Reconciling again changes nothing: the password is the Secret's.
	d.Status = *res.Status
	res, err = r.Reconcile(t.Context(), d)
	require.NoError(t, err)
	require.Equal(t, ReasonProvisioned, ready(t, res.Status).Reason)
	s, err = kc.CoreV1().Secrets("shop").Get(t.Context(), SecretName("orders"), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, password, string(s.Data[SecretPassword]), "the password is generated once and kept")
	require.Equal(t, d.Spec.Owner, login(t, s.Data))
}

func TestReconcile_owner_defaults_to_the_Database_s_name(t *testing.T) {
	kc := kubefake.NewClientset()
	r := Reconciler{Kube: kc, Postgres: localPostgres(), FieldManager: "databases-controller"}
	d := newDatabase(t)
	d.Name, d.Spec.Owner = unique("billing-app"), ""
	t.Cleanup(func() { cleanup(t, d.Spec.DatabaseName, d.Name) })

	res, err := r.Reconcile(t.Context(), d)
	require.NoError(t, err)
	require.Equal(t, ReasonProvisioned, ready(t, res.Status).Reason)
	s, err := kc.CoreV1().Secrets("shop").Get(t.Context(), SecretName(d.Name), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, d.Name, login(t, s.Data), "a name with a dash is quoted, never concatenated")
}

func TestReconcile_reports_a_name_conflict_without_retrying(t *testing.T) {
	kc := kubefake.NewClientset()
	r := Reconciler{Kube: kc, Postgres: localPostgres(), FieldManager: "databases-controller"}
	first := newDatabase(t)
	_, err := r.Reconcile(t.Context(), first)
	require.NoError(t, err)

	tests := map[string]func(d *Object){
		"a database another role owns": func(d *Object) { d.Spec.DatabaseName = first.Spec.DatabaseName },
		"a role another Database made": func(d *Object) { d.Spec.Owner = first.Spec.Owner },
		"a role nobody made":           func(d *Object) { d.Spec.Owner = "postgres" },
		"a Secret another object owns": func(d *Object) { d.Name = first.Name },
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			d := newDatabase(t)
			d.Name = "other"
			change(&d)
			res, err := r.Reconcile(t.Context(), d)
			require.NoError(t, err, "retrying can't resolve a conflict")
			c := ready(t, res.Status)
			require.Equal(t, metav1.ConditionFalse, c.Status)
			require.Equal(t, ReasonNameConflict, c.Reason)
			require.Equal(t, conflictRecheck, res.After)
		})
	}
	// The first Database's password is still the one that logs in.
	s, err := kc.CoreV1().Secrets("shop").Get(t.Context(), SecretName(first.Name), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, first.Spec.Owner, login(t, s.Data))
}

// refused is a Host's Dial that can't reach anything.
func refused(_ context.Context, network, _ string) (net.Conn, error) {
	return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
}

func TestReconcile_reports_PostgreSQL_unavailable_and_retries(t *testing.T) {
	pg := localPostgres()
	pg.Dial = refused
	r := Reconciler{Kube: kubefake.NewClientset(), Postgres: pg, FieldManager: "databases-controller"}
	d := newDatabase(t)

	res, err := r.Reconcile(t.Context(), d)
	require.Error(t, err, "an error retries with backoff")
	require.True(t, errors.Is(err, syscall.ECONNREFUSED), "%v", err)
	c := ready(t, res.Status)
	require.Equal(t, metav1.ConditionFalse, c.Status)
	require.Equal(t, ReasonPostgresUnavailable, c.Reason)

	require.Error(t, r.Finalize(t.Context(), d), "a finalizer that can't drop retries")
}

func TestReconcile_reports_an_owner_name_too_long(t *testing.T) {
	r := Reconciler{Kube: kubefake.NewClientset(), Postgres: localPostgres(), FieldManager: "databases-controller"}
	d := newDatabase(t)
	d.Name, d.Spec.Owner = strings.Repeat("a", 64), ""
	res, err := r.Reconcile(t.Context(), d)
	require.NoError(t, err)
	require.Equal(t, ReasonInvalidOwner, ready(t, res.Status).Reason)
}

func TestFinalize_drops_on_Delete_and_keeps_on_Retain(t *testing.T) {
	tests := map[DeletionPolicy]bool{Delete: false, Retain: true}
	for policy, kept := range tests {
		t.Run(string(policy), func(t *testing.T) {
			r := Reconciler{Kube: kubefake.NewClientset(), Postgres: localPostgres(), FieldManager: "databases-controller"}
			d := newDatabase(t)
			d.Spec.DeletionPolicy = policy
			_, err := r.Reconcile(t.Context(), d)
			require.NoError(t, err)

			require.NoError(t, r.Finalize(t.Context(), d))
			require.NoError(t, r.Finalize(t.Context(), d), "Finalize is idempotent")
			require.Equal(t, kept, admin[bool](t, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", d.Spec.DatabaseName))
			require.Equal(t, kept, admin[bool](t, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", d.Spec.Owner))
		})
	}
}

func TestFinalize_leaves_a_database_it_does_not_own(t *testing.T) {
	r := Reconciler{Kube: kubefake.NewClientset(), Postgres: localPostgres(), FieldManager: "databases-controller"}
	first := newDatabase(t)
	_, err := r.Reconcile(t.Context(), first)
	require.NoError(t, err)

	// A second Database naming the first's database never got it.
	d := newDatabase(t)
	d.Spec.DatabaseName = first.Spec.DatabaseName
	require.NoError(t, r.Finalize(t.Context(), d))
	require.True(t, admin[bool](t, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", first.Spec.DatabaseName))
}

func TestFinalize_keeps_a_role_that_owns_a_database_Retain_kept(t *testing.T) {
	r := Reconciler{Kube: kubefake.NewClientset(), Postgres: localPostgres(), FieldManager: "databases-controller"}
	// The Database is kept with Retain, deleted, and created again, the
	// same object name and owner, with another database: it adopts the
	// role, which owns the database the Retain kept.
	kept := newDatabase(t)
	kept.Spec.DeletionPolicy = Retain
	_, err := r.Reconcile(t.Context(), kept)
	require.NoError(t, err)
	require.NoError(t, r.Finalize(t.Context(), kept))

	d := newDatabase(t)
	d.Spec.Owner = kept.Spec.Owner
	_, err = r.Reconcile(t.Context(), d)
	require.NoError(t, err)

	require.NoError(t, r.Finalize(t.Context(), d), "the role owns the kept database: dropping it would fail for good")
	require.False(t, admin[bool](t, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", d.Spec.DatabaseName))
	require.True(t, admin[bool](t, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", kept.Spec.DatabaseName), "Retain kept it")
	require.True(t, admin[bool](t, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", d.Spec.Owner), "the role stays with the database it owns")
}

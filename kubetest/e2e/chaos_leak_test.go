package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// errorLog keeps the message of every error the test's code saw.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) add(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, err.Error())
}

func (l *errorLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

func TestChaos_the_token_appears_in_no_record_span_metric_error_or_output(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)

	// The controller's ServiceAccount may read its Memcacheds and watch
	// Deployments, but not apply one: every apply is forbidden, with an
	// error that names the request.
	const sa = "leaky-controller"
	grant(t, c, ns, sa, []rbacv1.PolicyRule{
		{APIGroups: []string{r.Group}, Resources: []string{"memcacheds"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{r.Group}, Resources: []string{"memcacheds/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list", "watch"}},
	}, ns, r.GVR(), deploymentsGVR)
	token, err := c.ServiceAccountToken(t.Context(), ns, sa)
	require.NoError(t, err)
	require.Greater(t, len(token), 32)
	// Through the recording proxy, as every failure-injection test: the
	// abort's scenario reaches no request.
	_, conn := recordedWire(t, c)
	conn.Token = func(context.Context) (string, error) { return token, nil }

	var (
		errs    errorLog
		ticks   counter
		netw    = &chaosNetwork{}
		direct  dynamic.Interface
		restore time.Time
		tickMu  sync.Mutex
		ticked  []time.Time
	)
	a := startChaosController(t, conn, app.Host{Network: netw}, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		if direct, err = dynamic.NewForConfig(client.Config()); err != nil {
			return nil, err
		}
		settings := settingsFor(sa, ns, "pod-0")
		settings.Namespace = ns
		applies := experimentReconciler{kube: kc, log: &reconcileLog{}}
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(ctx context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
				if m.Name != "ticking" {
					res, err := applies.Reconcile(ctx, m)
					errs.add(err)
					return res, err
				}
				// An object that reconciles every 200ms, reading itself,
				// so requests go out while the API server is unreachable.
				ticks.add(m.Name)
				_, err := direct.Resource(r.GVR()).Namespace(ns).Get(ctx, m.Name, metav1.GetOptions{})
				errs.add(err)
				if err == nil {
					tickMu.Lock()
					ticked = append(ticked, time.Now())
					tickMu.Unlock()
				}
				return kube.Result[memcachedStatus]{After: 200 * time.Millisecond}, err
			}),
			kube.TrustScenario(scenarioAnnotation, inNamespace(ns)))
	}, app.WithFaults(fault.Settings{Decoder: codec}))

	createWith(t, memcacheds, r, ns, "forbidden", nil, nil)
	createWith(t, memcacheds, r, ns, "aborted", nil, map[string]string{
		scenarioAnnotation: annotationValue(t, codec, fit.Rule{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}}),
	})
	createWith(t, memcacheds, r, ns, "ticking", nil, nil)
	failedWith := func(needle string) func() bool {
		return func() bool { return len(containing(a.Telemetry().ExceptionMessages("reconcile failed"), needle)) > 0 }
	}
	wait.For(t, time.Minute, failedWith("is forbidden"), "the forbidden apply never failed", a)
	wait.For(t, time.Minute, failedWith("injected abort"), "the scenario never aborted the apply", a)
	wait.For(t, time.Minute, func() bool { return ticks.of("ticking") >= 3 }, "never ticks", a)

	// The API server is unreachable for a while: the watches, the Lease's
	// renewals and the reconciles' requests fail.
	netw.Cut()
	time.Sleep(chaosSize(3*time.Second, 5*time.Second))
	_, err = direct.Resource(r.GVR()).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	require.Error(t, err)
	errs.add(err)
	netw.Restore()
	restore = time.Now()
	wait.For(t, time.Minute, func() bool {
		tickMu.Lock()
		defer tickMu.Unlock()
		return len(ticked) > 0 && ticked[len(ticked)-1].After(restore.Add(time.Second))
	}, "the ticks never resume", a)
	wait.For(t, time.Minute, failedWith("connection refused"), "no reconcile met the unreachable API server", a)
	require.Equal(t, 0, a.Stop())

	texts := textsOf(t, a.Telemetry())
	places := map[string][]string{
		"spans":   texts.spans,
		"records": texts.records,
		"metrics": texts.metrics,
		"errors":  errs.all(),
		"stderr":  {a.Stderr()},
		"stdout":  {a.Stdout()},
	}
	// The grep can see: each place holds what the failures put there.
	for place, needles := range map[string][]string{
		"spans":   {"forbidden", "aborted", "ticking", "is forbidden", "injected abort", "connection refused"},
		"records": {"forbidden", "aborted", "ticking", "is forbidden", "injected abort", "connection refused"},
		"metrics": {sa},
		"errors":  {"is forbidden", "injected abort", "connection refused"},
	} {
		for _, needle := range needles {
			require.NotEmpty(t, containing(places[place], needle), "the %s don't hold %q: the grep would see nothing there", place, needle)
		}
	}
	// The token, or a part of it long enough to matter, is nowhere.
	seen := 0
	for place, ts := range places {
		seen += len(ts)
		for _, needle := range []string{token, token[:16], token[len(token)-16:]} {
			require.Empty(t, containing(ts, needle), "the %s hold the token", place)
		}
	}
	t.Logf("figure: token leak: 0 of %d strings (%d span, %d record, %d metric texts, %d errors, %d bytes of stderr) hold the token or 16 characters of it",
		seen, len(texts.spans), len(texts.records), len(texts.metrics), len(errs.all()), len(a.Stderr()))
}

package kube

import (
	"context"
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/internal/reconciled"
	"github.com/loam-dev/loam/ports"
)

// The tests in this file run a Controller with a TrustScenario on
// client-go's fakes, in synctest bubbles, as serve_test.go's do. The
// fakes never see a request's context, so what a reconcile carries is
// read where the end user's code and the controller's writer meet it; the
// Client's own points, and the annotation carried on to children, are
// tested against a real API server in kubetest/e2e.

// scenarioAnnotation is the annotation the tests' controllers trust.
const scenarioAnnotation = "acme.example.com/failure-scenario"

// the point the tests' scenarios name, and the end user's code evaluates.
const deploymentsPatch = "kube:deployments.apps:patch"

// faultsForTest returns the failure injector of an App with WithFaults,
// reading jsonscenario's member acme.fault, and its codec.
func faultsForTest(t *testing.T) (*fault.Injector, *jsonscenario.Codec) {
	t.Helper()
	codec, err := jsonscenario.New("acme.fault")
	require.NoError(t, err)
	faults, err := fault.New(fault.Settings{Decoder: codec})
	require.NoError(t, err)
	return faults, codec
}

// scenarioValue returns the annotation value that carries rules, as the
// tool that runs an experiment writes it: the baggage that
// fit.ContextWithScenario leaves.
func scenarioValue(t *testing.T, codec fit.Encoder, rules ...fit.Rule) string {
	t.Helper()
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: rules})
	require.NoError(t, err)
	return baggage.FromContext(ctx).String()
}

// abortApplies is a scenario that aborts every apply of a Deployment.
var abortApplies = fit.Rule{Point: deploymentsPatch, Fault: fit.Fault{Abort: true}}

func annotated(u *unstructured.Unstructured, value string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{scenarioAnnotation: value})
	return u
}

// sighting is what one call of the end user's code, or one write of the
// controller, found in its context.
type sighting struct {
	// what is "reconcile", "finalize", "status", "+finalizer" or
	// "-finalizer", then the object's name.
	what string
	// met is the Fault deploymentsPatch meets in the context.
	met fit.Fault
	// baggage is the context's baggage.
	baggage baggage.Baggage
	// mark is the context's reconcile mark, for the Client; marked is
	// false without one.
	mark   reconciled.Object
	marked bool
	// labels are the object's labels, for the end user's code.
	labels map[string]string
}

// sightings collects what every call saw, in order.
type sightings struct {
	faults *fault.Injector

	mu   sync.Mutex
	list []sighting
}

func (s *sightings) see(ctx context.Context, what string, labels map[string]string) {
	mark, marked := reconciled.FromContext(ctx)
	seen := sighting{
		what: what, met: s.faults.Eval(ctx, deploymentsPatch), baggage: baggage.FromContext(ctx),
		mark: mark, marked: marked, labels: labels,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, seen)
}

func (s *sightings) all() []sighting {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// whats returns what each call was, in order.
func (s *sightings) whats() []string {
	var w []string
	for _, seen := range s.all() {
		w = append(w, seen.what)
	}
	return w
}

// sightingReconciler reports each Memcached's size as its ready replicas,
// telling seen what its context carries.
type sightingReconciler struct{ seen *sightings }

func (r sightingReconciler) Reconcile(ctx context.Context, m cacheObject) (Result[cacheStatus], error) {
	r.seen.see(ctx, "reconcile "+m.Name, m.Labels)
	st := m.Status
	st.ReadyReplicas = m.Spec.Size
	return Result[cacheStatus]{Status: &st}, nil
}

// sightingFinalize is a Finalize whose f tells seen what its context
// carries.
func sightingFinalize(seen *sightings) Part {
	return Finalize("cache.example.com/finalizer", func(ctx context.Context, m cacheObject) error {
		seen.see(ctx, "finalize "+m.Name, m.Labels)
		return nil
	})
}

// sightingWriter tells seen what the context of each of the controller's
// writes carries, and applies it.
type sightingWriter struct {
	ports.Writer
	seen *sightings
}

func (w sightingWriter) ApplyStatus(ctx context.Context, key ports.Key, uid types.UID, status []byte) ([]byte, error) {
	w.seen.see(ctx, "status "+key.Name, nil)
	return w.Writer.ApplyStatus(ctx, key, uid, status)
}

func (w sightingWriter) ApplyFinalizer(ctx context.Context, key ports.Key, uid types.UID, finalizer string, present bool) error {
	what := "-finalizer "
	if present {
		what = "+finalizer "
	}
	w.seen.see(ctx, what+key.Name, nil)
	return w.Writer.ApplyFinalizer(ctx, key, uid, finalizer, present)
}

// endings passes every call on to the Recorder it wraps, and keeps how
// each reconcile ended.
type endings struct {
	ports.Recorder

	mu      sync.Mutex
	reports []ports.Report
}

func (e *endings) ReconcileEnded(ctx context.Context, key ports.Key, report ports.Report) {
	e.mu.Lock()
	e.reports = append(e.reports, report)
	e.mu.Unlock()
	e.Recorder.ReconcileEnded(ctx, key, report)
}

func (e *endings) outcomes() []ports.Outcome {
	e.mu.Lock()
	defer e.mu.Unlock()
	var o []ports.Outcome
	for _, r := range e.reports {
		o = append(o, r.Outcome)
	}
	return o
}

// trustHarness is a Controller of caches on the fakes, in an App whose
// Setup has faults, reporting to an in-memory Telemetry.
type trustHarness struct {
	*harness
	telemetry *apptest.Telemetry
	ended     *endings
}

// newTrustHarness builds the Controller of caches that rec reconciles,
// with an Owns of Deployments and parts, in an App whose failure injector
// is faults, and tells seen what each of its writes carries.
func newTrustHarness(t *testing.T, faults *fault.Injector, rec Reconciler[cacheSpec, cacheStatus], parts []Part, seen *sightings, objects ...runtime.Object) *trustHarness {
	t.Helper()
	tel := apptest.NewTelemetry()
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: tel.Telemetry, Faults: faults}
	settings := settingsForTest()
	// The reconcile's span and its events, as the App's telemetry records
	// them, and the end of each reconcile.
	var ended *endings
	h := newHarnessWith(t, s, settings, rec, parts, harnessOptions{
		writer: func(w ports.Writer) ports.Writer { return sightingWriter{w, seen} },
		recorder: func(r ports.Recorder) ports.Recorder {
			ended = &endings{Recorder: r}
			return ended
		},
	}, objects...)
	return &trustHarness{harness: h, telemetry: tel, ended: ended}
}

// reconcileSpans returns the ended spans of the harness's reconciles.
func (h *trustHarness) reconcileSpans() []tracetest.SpanStub {
	return h.telemetry.SpansNamed("reconcile Memcached")
}

// events returns the events named name on the reconciles' spans.
func (h *trustHarness) events(name string) []sdktrace.Event {
	var events []sdktrace.Event
	for _, s := range h.reconcileSpans() {
		for _, e := range s.Events {
			if e.Name == name {
				events = append(events, e)
			}
		}
	}
	return events
}

// trustCount counts a trust func's calls.
type trustCount struct{ calls atomic.Int32 }

// returning returns a trust func that counts its calls and returns
// trusted.
func (c *trustCount) returning(trusted bool) func(metav1.Object) bool {
	return func(metav1.Object) bool {
		c.calls.Add(1)
		return trusted
	}
}

func TestTrustScenario_carries_a_trusted_object_s_scenario_into_every_step_of_its_reconciles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults, codec := faultsForTest(t)
		value := scenarioValue(t, codec, abortApplies)
		seen := &sightings{faults: faults}
		var asked []metav1.Object
		var mu sync.Mutex
		trust := TrustScenario(scenarioAnnotation, func(obj metav1.Object) bool {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, obj)
			// trust's copy is its own: changing it changes nothing else.
			obj.SetLabels(map[string]string{"changed": "by trust"})
			return obj.GetNamespace() == "ns"
		})
		h := newTrustHarness(t, faults, sightingReconciler{seen}, []Part{sightingFinalize(seen), trust}, seen,
			annotated(memcached("a", 1), value))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		close(h.elector.grant)
		synctest.Wait()

		// The object is being deleted, held by the finalizer.
		o, err := h.dynamic.Tracker().Get(memcacheds, "ns", "a")
		require.NoError(t, err)
		deleting := o.(*unstructured.Unstructured).DeepCopy()
		deleting.SetDeletionTimestamp(ptr.To(metav1.Now()))
		require.NoError(t, h.dynamic.Tracker().Update(memcacheds, deleting, "ns"))
		synctest.Wait()
		stop()
		require.NoError(t, <-h.served)

		require.Equal(t, []string{
			"+finalizer a",            // the finalizer's apply, before anything else
			"reconcile a", "status a", // the Reconciler and its status apply
			"reconcile a",                // the status changed the object; the same status settles it
			"finalize a", "-finalizer a", // a Finalize's f and the finalizer's removal
		}, seen.whats())
		for _, s := range seen.all() {
			require.Equal(t, fit.Fault{Abort: true}, s.met, "%s: the point the end user's code evaluates meets the scenario", s.what)
			require.Equal(t, value, s.baggage.String(), "%s: the context's baggage is the scenario", s.what)
			require.True(t, s.marked, "%s: marked for the Client to carry the scenario on to children", s.what)
			require.Equal(t, types.UID("a-uid"), s.mark.UID, s.what)
			require.Equal(t, scenarioAnnotation, s.mark.Annotation, s.what)
			require.Equal(t, value, s.mark.Scenario.String(), s.what)
			require.NotContains(t, s.labels, "changed", "%s: trust's copy shares nothing with the object", s.what)
		}
		mu.Lock()
		require.Len(t, asked, 4, "trust is asked in each reconcile")
		for _, obj := range asked {
			require.IsType(t, &unstructured.Unstructured{}, obj)
			require.Equal(t, "a", obj.GetName())
			require.Equal(t, types.UID("a-uid"), obj.GetUID())
			require.Equal(t, value, obj.GetAnnotations()[scenarioAnnotation])
		}
		mu.Unlock()
		require.Equal(t, []ports.Outcome{ports.OutcomeSuccess, ports.OutcomeSuccess, ports.OutcomeSuccess, ports.OutcomeSuccess}, h.ended.outcomes())

		// The Reconciler's and f's evaluations are on the reconciles' spans,
		// and nothing was stripped.
		evaluations := h.events(fault.EvaluationEvent)
		require.NotEmpty(t, evaluations)
		for _, e := range evaluations {
			require.Contains(t, e.Attributes, fault.PointKey.String(deploymentsPatch))
			require.Contains(t, e.Attributes, fault.AbortKey.Bool(true))
		}
		require.Empty(t, h.events(fault.StripEvent))
	})
}

func TestTrustScenario_drops_every_other_member_of_the_annotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults, codec := faultsForTest(t)
		value := scenarioValue(t, codec, abortApplies)
		seen := &sightings{faults: faults}
		h := newTrustHarness(t, faults, sightingReconciler{seen}, []Part{TrustScenario(scenarioAnnotation, func(metav1.Object) bool { return true })}, seen,
			annotated(memcached("a", 1), "team=cache,"+value+",userId=alice;private"))
		// Baggage the reconcile already has stays: the scenario joins it.
		region, err := baggage.NewMemberRaw("region", "eu")
		require.NoError(t, err)
		b, err := baggage.New(region)
		require.NoError(t, err)
		ctx, stop := context.WithCancel(baggage.ContextWithBaggage(t.Context(), b))
		h.serve(ctx)
		close(h.elector.grant)
		synctest.Wait()
		stop()
		require.NoError(t, <-h.served)

		all := seen.all()
		require.NotEmpty(t, all)
		for _, s := range all {
			require.Equal(t, value, s.baggage.Member("acme.fault").String(), "%s: the Decoder's member joins", s.what)
			require.Equal(t, "eu", s.baggage.Member("region").Value(), "%s: the reconcile's own baggage stays", s.what)
			require.Equal(t, 2, s.baggage.Len(), "%s: no other member of the annotation joins", s.what)
			require.Equal(t, value, s.mark.Scenario.String(), "%s: only the scenario goes on to children", s.what)
			require.Equal(t, fit.Fault{Abort: true}, s.met, s.what)
		}
	})
}

func TestTrustScenario_strips_an_annotation_it_can_t_read_or_doesn_t_trust(t *testing.T) {
	faults, codec := faultsForTest(t)
	decodeErrorType := "github.com/loam-dev/loam/app/fault/fit.DecodeError"
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		trusted     bool
		// asked is whether trust is asked; strips whether each reconcile
		// records a strip, and errorType its error.type ("" for none).
		asked     bool
		strips    bool
		errorType string
		message   string
	}{
		{
			name:        "no annotation",
			annotations: map[string]string{"other.example.com/note": scenarioValue(t, codec, abortApplies)},
			trusted:     true,
		},
		{
			name:        "none of the Decoder's members",
			annotations: map[string]string{scenarioAnnotation: "team=cache,userId=alice"},
			trusted:     true,
		},
		{
			name:        "an object trust doesn't trust",
			annotations: map[string]string{scenarioAnnotation: scenarioValue(t, codec, abortApplies)},
			asked:       true,
			strips:      true,
		},
		{
			name:        "a value that isn't W3C baggage",
			annotations: map[string]string{scenarioAnnotation: "abort every apply, please"},
			trusted:     true,
			strips:      true,
			errorType:   decodeErrorType,
			message:     "fit: baggage: ",
		},
		{
			name:        "a scenario the Decoder can't read",
			annotations: map[string]string{scenarioAnnotation: "acme.fault=%7Bnot%20json"},
			trusted:     true,
			strips:      true,
			errorType:   decodeErrorType,
			message:     `fit: baggage member "acme.fault": `,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seen := &sightings{faults: faults}
				var trust trustCount
				obj := memcached("a", 1)
				obj.SetAnnotations(tc.annotations)
				h := newTrustHarness(t, faults, sightingReconciler{seen}, []Part{TrustScenario(scenarioAnnotation, trust.returning(tc.trusted))}, seen, obj)
				ctx, stop := context.WithCancel(t.Context())
				h.serve(ctx)
				close(h.elector.grant)
				synctest.Wait()
				stop()
				require.NoError(t, <-h.served)

				// The reconcile goes on, without a scenario: the status is
				// applied, which reconciles the object once more.
				require.Equal(t, []string{"reconcile a", "status a", "reconcile a"}, seen.whats())
				for _, s := range seen.all() {
					require.Zero(t, s.met, s.what)
					require.Zero(t, s.baggage.Len(), s.what)
					require.False(t, s.marked, s.what)
				}
				require.Empty(t, h.events(fault.EvaluationEvent), "a context without a scenario evaluates nothing")

				if tc.asked {
					require.Equal(t, int32(2), trust.calls.Load(), "asked in each reconcile")
				} else {
					require.Zero(t, trust.calls.Load(), "never asked about an object without a scenario")
				}
				spans := h.reconcileSpans()
				require.Len(t, spans, 2)
				for _, span := range spans {
					var strips []sdktrace.Event
					for _, e := range span.Events {
						if e.Name == fault.StripEvent {
							strips = append(strips, e)
						}
					}
					if !tc.strips {
						require.Empty(t, strips, "nothing recorded")
						continue
					}
					require.Len(t, strips, 1)
					attrs := attribute.NewSet(strips[0].Attributes...)
					if tc.errorType == "" {
						require.Zero(t, attrs.Len(), "an untrusted object's strip has no attributes")
						continue
					}
					typ, ok := attrs.Value("error.type")
					require.True(t, ok)
					require.Equal(t, tc.errorType, typ.AsString())
					msg, ok := attrs.Value("error.message")
					require.True(t, ok)
					require.True(t, strings.HasPrefix(msg.AsString(), tc.message), "error.message %q", msg.AsString())
				}
			})
		})
	}
}

func TestTrustScenario_a_reconcile_an_owned_resource_triggered_carries_the_owner_s_scenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults, codec := faultsForTest(t)
		owners := scenarioValue(t, codec, abortApplies)
		seen := &sightings{faults: faults}
		h := newTrustHarness(t, faults, sightingReconciler{seen}, []Part{TrustScenario(scenarioAnnotation, func(metav1.Object) bool { return true })}, seen,
			annotated(memcached("a", 1), owners))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		close(h.elector.grant)
		synctest.Wait()
		before := len(seen.all())

		// The owned Deployment carries a scenario of its own, which isn't
		// read: its owner is what is reconciled.
		d := deploymentOf("a")
		d.Annotations = map[string]string{scenarioAnnotation: scenarioValue(t, codec, fit.Rule{Point: "kube:secrets:get", Fault: fit.Fault{Delay: time.Second}})}
		require.NoError(t, h.meta.Tracker().Create(deployments, d, "ns"))
		synctest.Wait()
		stop()
		require.NoError(t, <-h.served)

		after := seen.all()[before:]
		require.Len(t, after, 1, "the Deployment's creation reconciles its owner")
		require.Equal(t, "reconcile a", after[0].what)
		require.Equal(t, owners, after[0].baggage.String())
		require.Equal(t, fit.Fault{Abort: true}, after[0].met)
		require.Equal(t, types.UID("a-uid"), after[0].mark.UID)
	})
}

// mistakesSetup returns a Setup and a Client of an API server nothing
// serves: building a Controller opens no connection.
func mistakesSetup(t *testing.T) (*app.Setup, *Client) {
	t.Helper()
	faults, _ := faultsForTest(t)
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry, Faults: faults}
	c, err := NewClient(s, Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	return s, c
}

func TestTrustScenario_mistakes_are_reported_together_with_every_other(t *testing.T) {
	s, c := mistakesSetup(t)
	trustAll := func(metav1.Object) bool { return true }
	tooLong := "example.com/" + strings.Repeat("x", 64)
	parts := []Part{
		TrustScenario("", trustAll),
		TrustScenario("acme.example.com/Bad Key!", trustAll),
		TrustScenario(scenarioAnnotation, nil),
		TrustScenario(tooLong, trustAll),
		TrustScenario("-bad.example.com/scenario", nil),
		Owns(schema.GroupVersionResource{Group: "apps"}),
	}
	wants := []string{
		`kube: Part 0, TrustScenario(""): the annotation is empty`,
		`kube: Part 1, TrustScenario("acme.example.com/Bad Key!"): a Controller takes one TrustScenario, and this is a second`,
		`kube: Part 1, TrustScenario("acme.example.com/Bad Key!"): the annotation "acme.example.com/Bad Key!" is not a valid annotation key`,
		`kube: Part 2, TrustScenario("acme.example.com/failure-scenario"): trust is nil`,
		`kube: Part 3, TrustScenario("example.com/` + strings.Repeat("x", 64) + `"): the annotation "example.com/` + strings.Repeat("x", 64) + `" is not a valid annotation key: name part must be no more than 63 bytes`,
		`kube: Part 4, TrustScenario("-bad.example.com/scenario"): the annotation "-bad.example.com/scenario" is not a valid annotation key: prefix part`,
		`kube: Part 4, TrustScenario("-bad.example.com/scenario"): trust is nil`,
		`kube: Part 5, Owns(apps/, Resource=): the GVR has no Version`,
	}

	t.Run("NewController", func(t *testing.T) {
		_, err := NewController[cacheSpec, cacheStatus](s, c, settingsForTest(), caches, nil, parts...)
		require.Error(t, err)
		for _, want := range append(wants, "kube: NewController: the Reconciler is nil") {
			require.ErrorContains(t, err, want)
		}
	})
	t.Run("NewKindController", func(t *testing.T) {
		namespaces := Kind[corev1.Namespace]{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", Scope: Cluster}
		settings := settingsForTest()
		settings.Name = ""
		_, err := NewKindController(s, c, settings, namespaces, KindReconcilerFunc[corev1.Namespace](func(context.Context, corev1.Namespace) (time.Duration, error) {
			return 0, nil
		}), parts...)
		require.Error(t, err)
		for _, want := range append(wants, "kube: Settings.Name: is empty") {
			require.ErrorContains(t, err, want)
		}
	})
}

func TestTrustScenario_takes_any_valid_annotation_key(t *testing.T) {
	s, c := mistakesSetup(t)
	for _, key := range []string{
		scenarioAnnotation,
		"failure-scenario",                  // no prefix
		"Acme.Example.com/Failure_Scenario", // the API server checks a key's case aside
		"a.b/" + strings.Repeat("x", 63),
	} {
		part := TrustScenario(key, func(metav1.Object) bool { return true })
		_, err := NewController(s, c, settingsForTest(), caches, sightingReconciler{}, part)
		require.NoError(t, err, key)
		p, err := partsOf[cacheObject]([]Part{part})
		require.NoError(t, err, key)
		require.NotNil(t, scenarioPrepare(p.trust, s.Faults, noRecorder{}), "%s: an App with faults reads the annotation", key)
	}
}

func TestTrustScenario_reads_nothing_when_the_App_has_no_failure_injection(t *testing.T) {
	_, codec := faultsForTest(t)
	for _, tc := range []struct {
		name   string
		faults *fault.Injector
	}{
		{"no injector", nil},
		{"the inert injector", fault.Inert()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The sightings evaluate with an injector of their own, so a
				// scenario that reached a context would show.
				live, _ := faultsForTest(t)
				seen := &sightings{faults: live}
				var trust trustCount
				h := newTrustHarness(t, tc.faults, sightingReconciler{seen}, []Part{TrustScenario(scenarioAnnotation, trust.returning(true))}, seen,
					annotated(memcached("a", 1), scenarioValue(t, codec, abortApplies)),
					annotated(memcached("b", 1), "not baggage at all"))
				require.Nil(t, scenarioPrepare(h.trust, h.faults, noRecorder{}), "no step reads the annotation")
				ctx, stop := context.WithCancel(t.Context())
				h.serve(ctx)
				close(h.elector.grant)
				synctest.Wait()
				stop()
				require.NoError(t, <-h.served)

				require.Len(t, seen.all(), 6, "both reconciled, their statuses applied, and reconciled again")
				for _, s := range seen.all() {
					require.Zero(t, s.baggage.Len(), s.what)
					require.Zero(t, s.met, s.what)
					require.False(t, s.marked, s.what)
				}
				require.Zero(t, trust.calls.Load(), "trust is never asked")
				require.Empty(t, h.events(fault.StripEvent), "nothing is stripped")
				require.Empty(t, h.events(fault.EvaluationEvent))
			})
		})
	}
}

func TestTrustScenario_without_the_Part_reads_nothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults, codec := faultsForTest(t)
		seen := &sightings{faults: faults}
		h := newTrustHarness(t, faults, sightingReconciler{seen}, nil, seen,
			annotated(memcached("a", 1), scenarioValue(t, codec, abortApplies)))
		require.Nil(t, scenarioPrepare(h.trust, h.faults, noRecorder{}))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		close(h.elector.grant)
		synctest.Wait()
		stop()
		require.NoError(t, <-h.served)
		require.NotEmpty(t, seen.all())
		for _, s := range seen.all() {
			require.Zero(t, s.baggage.Len(), s.what)
			require.Zero(t, s.met, s.what)
		}
	})
}

func TestTrustScenario_a_panic_in_trust_is_the_reconcile_s_panic_and_applies_nothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		faults, codec := faultsForTest(t)
		seen := &sightings{faults: faults}
		var trust trustCount
		h := newTrustHarness(t, faults, sightingReconciler{seen}, []Part{
			sightingFinalize(seen),
			TrustScenario(scenarioAnnotation, func(obj metav1.Object) bool {
				trust.calls.Add(1)
				panic(errors.New("a bug in trust"))
			}),
		}, seen, annotated(memcached("a", 1), scenarioValue(t, codec, abortApplies)), memcached("b", 1))
		ctx, stop := context.WithCancel(t.Context())
		h.serve(ctx)
		close(h.elector.grant)
		time.Sleep(time.Hour)
		synctest.Wait()

		require.Equal(t, int32(1), trust.calls.Load(), "the key is forgotten, never retried")
		for _, s := range seen.all() {
			require.False(t, strings.HasSuffix(s.what, " a"), "nothing else ran for a: no finalizer, no Reconciler, no status, but %s", s.what)
		}
		require.Zero(t, h.writer.statusesOf("a"))
		require.NotContains(t, h.writer.finalizers, "+a")
		o, err := h.dynamic.Tracker().Get(memcacheds, "ns", "a")
		require.NoError(t, err)
		require.Empty(t, o.(*unstructured.Unstructured).GetFinalizers())
		require.Contains(t, seen.whats(), "reconcile b", "the rest go on")

		outcomes := h.ended.outcomes()
		require.Contains(t, outcomes, ports.OutcomePanic)
		panics := 0
		for _, o := range outcomes {
			if o == ports.OutcomePanic {
				panics++
			}
		}
		require.Equal(t, 1, panics)
		var exceptions int
		for _, span := range h.reconcileSpans() {
			for _, e := range span.Events {
				if e.Name == "exception" {
					exceptions++
				}
			}
		}
		require.Equal(t, 1, exceptions, "the panic is recorded on the reconcile's span")

		// A change reconciles it again, as after any panic.
		changed := annotated(memcached("a", 2), scenarioValue(t, codec, abortApplies))
		require.NoError(t, h.dynamic.Tracker().Update(memcacheds, changed, "ns"))
		synctest.Wait()
		require.Equal(t, int32(2), trust.calls.Load())
		stop()
		require.NoError(t, <-h.served)
	})
}

// BenchmarkTrustScenario_prepare measures the step each reconcile of a
// Controller with a TrustScenario takes first, in an App with faults: for
// an object without the annotation, the common case, and for a trusted
// one, which parses, decodes and copies.
func BenchmarkTrustScenario_prepare(b *testing.B) {
	codec, err := jsonscenario.New("acme.fault")
	require.NoError(b, err)
	faults, err := fault.New(fault.Settings{Decoder: codec})
	require.NoError(b, err)
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: []fit.Rule{abortApplies}})
	require.NoError(b, err)
	value := baggage.FromContext(ctx).String()
	trust := &scenarioTrust{annotation: scenarioAnnotation, trust: func(obj metav1.Object) bool { return obj.GetNamespace() == "ns" }}
	prepare := scenarioPrepare(trust, faults, noRecorder{})
	for _, bc := range []struct {
		name string
		obj  *unstructured.Unstructured
	}{
		{"no annotation", memcached("a", 1)},
		{"a trusted scenario", annotated(memcached("a", 1), value)},
	} {
		doc, err := bc.obj.MarshalJSON()
		require.NoError(b, err)
		obj := ports.Object{UID: bc.obj.GetUID(), Annotations: bc.obj.GetAnnotations(), JSON: doc}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = prepare(b.Context(), obj)
			}
		})
	}
}

func TestTrustOwnerScenario_mistakes_are_reported_together_with_every_other(t *testing.T) {
	s, c := mistakesSetup(t)
	owners := NewCache(Kind[metav1.PartialObjectMetadata]{GVR: caches.GVR(), Kind: caches.Kind, Scope: Namespaced}, CacheOptions[metav1.PartialObjectMetadata]{})
	unwatched := NewCache(Kind[metav1.PartialObjectMetadata]{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Scope: Namespaced}, CacheOptions[metav1.PartialObjectMetadata]{})
	var none *Cache[metav1.PartialObjectMetadata]
	toOwner := MapFunc(func(m metav1.Object) []Key { return []Key{{Namespace: m.GetNamespace(), Name: m.GetName()}} })
	staging := func(owner metav1.Object) bool { return owner.GetNamespace() == "staging" }
	for _, tc := range []struct {
		name  string
		parts []Part
		wants []string
	}{
		{"a nil Cache", []Part{TrustOwnerScenario(scenarioAnnotation, none, staging)}, []string{
			`kube: Part 0, TrustOwnerScenario("acme.example.com/failure-scenario", Cache(nil)): the Cache of owners is nil`,
		}},
		{"a Cache the Controller doesn't Watch", []Part{TrustOwnerScenario(scenarioAnnotation, unwatched, staging)}, []string{
			`kube: Part 0, TrustOwnerScenario("acme.example.com/failure-scenario", Cache(/v1, Resource=configmaps)): the Controller doesn't Watch Cache(/v1, Resource=configmaps), which the owners are read from: pass kube.Watches(owners, …) with it too`,
		}},
		{"a nil trust of the owners", []Part{Watches(owners, toOwner), TrustOwnerScenario(scenarioAnnotation, owners, nil)}, []string{
			`kube: Part 1, TrustOwnerScenario("acme.example.com/failure-scenario", Cache(cache.example.com/v1alpha1, Resource=memcacheds)): the owners' trust is nil: pass the rule their own controller's TrustScenario trusts them by`,
		}},
		{"a bad annotation, and a TrustScenario beside it", []Part{
			Watches(owners, toOwner),
			TrustOwnerScenario("Bad Key!", owners, staging),
			TrustScenario(scenarioAnnotation, func(metav1.Object) bool { return true }),
		}, []string{
			`kube: Part 1, TrustOwnerScenario("Bad Key!", Cache(cache.example.com/v1alpha1, Resource=memcacheds)): the annotation "Bad Key!" is not a valid annotation key`,
			`kube: Part 2, TrustScenario("acme.example.com/failure-scenario"): a Controller takes one TrustScenario, and this is a second`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewController(s, c, settingsForTest(), caches, sightingReconciler{}, tc.parts...)
			require.Error(t, err)
			for _, want := range tc.wants {
				require.ErrorContains(t, err, want)
			}
			require.Len(t, strings.Split(err.Error(), "\n"), len(tc.wants), "each mistake once: %v", err)
		})
	}

	// Watched, it is no mistake.
	_, err := NewController(s, c, settingsForTest(), caches, sightingReconciler{}, Watches(owners, toOwner), TrustOwnerScenario(scenarioAnnotation, owners, staging))
	require.NoError(t, err)
}

// TrustOwnerScenario's rule names each owner's children by the mapping of
// the Controller's Watches of the owners, and asks the owners' own rule.
func TestTrustOwnerScenario_names_children_by_the_Watches_mapping(t *testing.T) {
	owners := NewCache(Kind[metav1.PartialObjectMetadata]{GVR: caches.GVR(), Kind: caches.Kind, Scope: Namespaced}, CacheOptions[metav1.PartialObjectMetadata]{})
	toOwner := MapFunc(func(m metav1.Object) []Key { return []Key{{Namespace: m.GetNamespace(), Name: m.GetName()}} })
	staging := func(owner metav1.Object) bool { return owner.GetNamespace() == "staging" }
	object := func(ns, name string) metav1.Object {
		return &metav1.ObjectMeta{Namespace: ns, Name: name}
	}

	o := ownersOf(owners, scenarioAnnotation, staging, toOwner)
	require.NotNil(t, o.Names)
	require.True(t, o.Names(object("staging", "m"), object("staging", "m")), "the child the mapping names")
	require.False(t, o.Names(object("staging", "m"), object("staging", "copy")), "another child")
	require.True(t, o.Trust(object("staging", "m")))
	require.False(t, o.Trust(object("prod", "m")))
	require.Nil(t, ownersOf(owners, scenarioAnnotation, staging, ByIndex[metav1.PartialObjectMetadata](nil)).Names, "an index names nothing more")

	p, err := partsOf[metav1.PartialObjectMetadata]([]Part{TrustOwnerScenario(scenarioAnnotation, owners, staging), Watches(owners, toOwner)})
	require.NoError(t, err)
	require.NotNil(t, p.trust)
	require.NotNil(t, p.trust.trust, "the Watches' mapping makes the trust, whichever comes first")
}

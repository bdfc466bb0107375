// Package kube writes Kubernetes controllers as loam Services, on
// client-go's own informers, work queue and leader election, with no
// controller-runtime, no comment markers and no generated code.
//
// # Connecting
//
// A Client reaches one API server through the App's Host, from a
// Connection the end user's Init fills: the server's host:port, the TLS it
// is dialled with, and a Token function. NewClient checks every field and
// dials nothing; Client.Config returns a rest.Config for client-go's
// clientsets, dynamic and metadata clients, each of which then sends its
// requests through the Client's transport: dialled through the Host, no
// proxy, HTTP/2 with health-checking pings, the token cached for a minute,
// traced and measured with otelhttp (a watch excepted), no client-side rate
// limit.
//
// # Custom resources and Kubernetes' own kinds
//
// A Resource declares a custom resource as Go values — group, version,
// kind, plural, scope — with its spec and status as plain structs, and
// Resource.CRD reflects its CustomResourceDefinition from them. Rules,
// Field and FieldOf attach typed constraints to fields by pointer, so a
// misspelled constraint or a value of the wrong type doesn't compile. An
// Object is one of a Resource's objects: a plain struct with no DeepCopy
// and no scheme. Resource.Apply applies one with server-side apply, typed,
// under a field manager and with its controller's owner reference, as a
// Reconciler applies the children its object controls. A Kind names one
// of Kubernetes' own kinds, whose Go type client-go defines.
//
// # Controllers
//
// NewController reconciles a Resource's objects with a Reconciler, which
// is handed its own decoded copy of the object and returns its status; the
// controller applies the status with server-side apply when it changed.
// NewKindController does the same for a Kind with a KindReconciler. Owns
// reconciles an object again when a resource it controls changes; Watches
// reconciles the objects that depend on a related resource's changed
// object, as MapFunc or an Index says, and fills a Cache the Reconciler
// reads with no request; Finalize keeps an object until the end user's
// cleanup has run. FilterUpdates, and the UpdateFilters an Owns or a
// Watches takes, skip the updates a Reconciler has nothing to do about,
// such as its own status applies (SkipStatusOnly). Settings narrow what a
// Controller watches — a namespace, a set of them, a label and a field
// selector — bound each reconcile with ReconcileTimeout, and shape its
// retries; its work queue hands out changes ahead of a new leader's
// initial list, the resync and retries. Every replica keeps warm caches
// and only the holder of the Lease reconciles. A Controller is an
// app.Service: its Serve lists, watches and campaigns, and Synced reports
// readiness.
//
// # Failure injection
//
// In an App with failure injection (app.WithFaults), every request through
// the Client is an injection point named
// kube:<resource>[.<group>][/<subresource>]:<verb>, and the scenario is
// stripped from every request's baggage, since the API server takes no
// part. TrustScenario carries the scenario an object's annotation holds
// into that object's reconciles, for the objects its trust func trusts,
// and the Client carries it on to the children a reconcile applies, in the
// same annotation.
//
// # Telemetry
//
// A Controller reports through the Setup's providers, never OpenTelemetry's
// globals: a root span per reconcile, WARN and ERROR records for failures
// and panics, and six instruments under loam.kube.controller. client-go's
// own records reach the Setup's LoggerProvider through a logger in their
// context.
//
// # Events
//
// A Controller records events.k8s.io/v1 Events through its Client, as
// Settings.Name on behalf of the replica's LeaderElection.Identity: a
// Warning ReconcileFailed on the object of each failed or timed-out
// reconcile, and a ReconcilePanicked for a panic, unless
// Settings.FailureEvents is FailureEventsOff. Repeats become one Event's
// series. RecordEvent records an Event of the end user's own on the object
// a Reconciler, a KindReconciler or a Finalize was handed, naming a
// related object and an action with Related and Action. The Controller
// owns the writer: Serve starts it and Shutdown flushes it. Outside a
// reconcile, such as in a webhook's Admitter, an EventRecorder records on
// any object; the App owns it and flushes it once its Services stopped.
// kube/eventstest fakes RecordEvent's Events for a Reconciler's unit test.
package kube

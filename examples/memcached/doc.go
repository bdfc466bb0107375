// Package memcached is the kubebuilder book's Memcached operator written on
// loam: a Memcached custom resource whose controller applies a Deployment
// of memcached pods, with the flags of a ConfigMap the Memcached names,
// and reports how many are ready. It is the example the documentation
// walks through, and its tests are the patterns an end user copies.
//
// # Versions
//
// A Memcached has two versions. Memcached is cache.example.com/v1alpha1,
// whose spec.size says how many pods run and whose schema holds the image
// to memcached's own; MemcachedV1beta1 is v1beta1, which renames size
// replicas, and leaves the image to the operator's webhooks. v1beta1 is
// the version the API server stores, and the hub: v1alpha1 is its Spoke,
// converted to and from it by the operator's conversion webhook, and
// still served, with the same printer columns by the same names. The
// Reconciler reconciles v1alpha1: the API server converts every object
// the controller lists and watches, whatever version it was written in.
// deploy/crd.yaml is MemcachedV1beta1's CRD, both versions, which
// TestMemcachedCRD keeps true to the types; Memcached's own CRD, v1alpha1
// alone, is the one the demo and most e2e tests install, needing no
// webhook.
//
// # Webhooks
//
// Hooks are the operator's webhooks, which it serves itself when WEBHOOKS
// is on: the conversion of Memcacheds between v1alpha1 and v1beta1, a
// defaulting webhook that gives a Memcached that names no image the
// operator's default image, and a validating one that denies an image
// that starts with none of the operator's allowed prefixes (Images), a
// policy of the operator's settings that no CRD can hold. The API server
// calls the admission webhooks with v1beta1, converting a v1alpha1
// request first. Both controllers wait for the webhooks to listen before
// they list Memcacheds, and retry their first list for up to 30 s while
// the API server does not reach the conversion yet (kube.NewWebhooks);
// the pod's readiness includes the webhooks and both controllers'
// Synced, and the webhooks' Service (deploy/webhooks-service.yaml)
// publishes not-ready addresses, so the API server reaches the
// conversion that the controllers' caches need before the pod is ready.
// The operator never writes its CRD or the webhook configurations:
// deploy/ does.
//
// # Variables
//
// Init reads, reporting every mistake at once (exit 78):
//
//   - CONTROLLER_NAME (required), CONTROLLER_WORKERS,
//     CONTROLLER_RECONCILE_TIMEOUT, WATCH_NAMESPACES,
//     POD_NAMESPACE and POD_NAME (required: the Leases' namespace and
//     identity), and MEMCACHED_KUBECONFIG (the in-cluster service account
//     when unset): the controllers and their Connection;
//   - CONTROLLER_SHARDS: 0 (the default) or a power of two up to 256, the
//     Memcached controller's Settings.Shards, which splits the Memcacheds
//     among the replicas, each reconciling those of the shards whose
//     Leases it holds; Budget's controller stays leader-elected;
//   - PROBE_ADDRESS (:8081) and METRICS_ADDRESS (:8080): the probes and
//     /metrics;
//   - WEBHOOKS: on or off (the default), whether the operator serves its
//     webhooks; WEBHOOK_ADDRESS (:9443), where;
//     WEBHOOK_CERT_FILE and WEBHOOK_KEY_FILE
//     (/tmp/k8s-webhook-server/serving-certs/tls.crt and tls.key, where
//     deploy/deployment.yaml mounts the Secret memcached-webhooks-tls):
//     the serving certificate, read at Init and re-read when it rotates;
//   - MEMCACHED_ALLOWED_IMAGES: comma-separated prefixes an image must
//     start with (memcached:, the images v1alpha1's schema allows), and
//     MEMCACHED_DEFAULT_IMAGE (DefaultImage, v1alpha1's schema default),
//     which the prefixes must allow.
//
// The webhook variables are checked whether WEBHOOKS is on or off; the
// certificate's files are read only when it is on.
//
// # deploy/
//
// kubectl apply -k deploy applies the namespace, the CRD, the RBAC, the
// failure scenario's admission policy, the operator's Deployment (two
// replicas sharing the Memcached controller's CONTROLLER_SHARDS=4, with
// WEBHOOKS=on and the certificate's Secret mounted), the Service
// memcached-webhooks (443 to the operator's 9443) and the webhook
// configurations (deploy/webhooks.yaml, which TestWebhookConfigurations
// keeps true to Hooks). The CRD's conversion and the configurations call
// the webhooks through the Service, and trust its certificate through
// their caBundle, which deploy/ leaves empty, for one of:
//
//   - cert-manager: kubectl apply -k deploy-cert-manager, an overlay
//     beside deploy/ (kustomize refuses one inside its base), adds a
//     self-signed Issuer and the Certificate memcached-webhooks, which
//     writes the Secret and renews it; the annotation
//     cert-manager.io/inject-ca-from on the CRD and the configurations
//     has cert-manager's CA injector fill their caBundle;
//   - no cert-manager, as on kind: examples/cmd/webhookcerts issues a CA
//     and the certificate at deploy time, and writes a kustomization of
//     deploy/ with the Secret and the caBundle patches:
//     go run ./cmd/webhookcerts -base memcached/deploy -out ../bin/memcached-deploy-kind
//     from examples/, then kubectl apply -k ../bin/memcached-deploy-kind.
package memcached

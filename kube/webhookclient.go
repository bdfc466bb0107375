package kube

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loam-dev/loam/domain/webhookconfig"
)

// WebhookClient says how the API server reaches an App's webhooks: through
// a Service in the cluster, or at a URL, for a webhook outside the cluster
// or in a test. Exactly one of Service and URL is set. The configurations
// loam writes (a CRD's conversion stanza, ValidatingWebhookConfiguration,
// MutatingWebhookConfiguration) append each webhook's own path to it.
type WebhookClient struct {
	// Service is the Service in front of the App's webhooks.
	Service *WebhookService
	// URL is where the webhooks are served, such as
	// https://127.0.0.1:9443: an https URL with no query or fragment. Each
	// webhook's path is appended to its path.
	URL string
	// CABundle is the PEM of the certificates that verify the webhooks'
	// serving certificate. Left empty, it is for cert-manager's CA
	// injector to fill, as the annotation cert-manager.io/inject-ca-from
	// asks.
	CABundle []byte
	// OwnNamespace is the namespace the App runs in, which the webhooks
	// of Kinds, such as Pods, leave out (IncludeOwnNamespace says why).
	// Empty, it is the Service's Namespace; with a URL and no
	// OwnNamespace, no namespace is left out.
	OwnNamespace string
}

// WebhookService names the Service in front of an App's webhooks.
type WebhookService struct {
	// Namespace and Name name the Service.
	Namespace, Name string
	// Port is the Service's port; 0 is the API server's default, 443.
	Port int32
	// Path is prefixed to each webhook's own path, such as /hooks; empty
	// prefixes nothing.
	Path string
}

// mistakes returns an error for each mistake in c, named by field, as
// domain/webhookconfig finds them.
func (c WebhookClient) mistakes(field string) []error { return c.declared().Mistakes(field) }

// declared returns c as domain/webhookconfig reads it, as the end user
// declared it.
func (c WebhookClient) declared() webhookconfig.Client {
	cfg := webhookconfig.Client{URL: c.URL, CABundle: c.CABundle, OwnNamespace: c.OwnNamespace}
	if s := c.Service; s != nil {
		cfg.Service = &webhookconfig.Service{Namespace: s.Namespace, Name: s.Name, Port: s.Port, Path: s.Path}
	}
	return cfg
}

// config returns what domain/webhookconfig reads of c: as declared, with
// an empty OwnNamespace the Service's Namespace.
func (c WebhookClient) config() webhookconfig.Client {
	cfg := c.declared()
	if cfg.Service != nil && cfg.OwnNamespace == "" {
		cfg.OwnNamespace = cfg.Service.Namespace
	}
	return cfg
}

// conversion returns the clientConfig of the conversion webhook served at
// path. c must have no mistakes.
func (c WebhookClient) conversion(path string) *apiextensionsv1.WebhookClientConfig {
	return c.config().Conversion(path)
}

// conversionPath is the path of the conversion webhook of the resource
// named plural in group, which the CRD's conversion stanza names and the
// Webhooks Service serves.
func conversionPath(group, plural string) string { return webhookconfig.ConversionPath(group, plural) }

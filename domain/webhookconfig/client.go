package webhookconfig

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Client says how the API server reaches the webhooks: through a Service
// in the cluster or at a URL; exactly one is set, as Mistakes checks. Each
// webhook's path is appended to it.
type Client struct {
	Service *Service
	// URL is an https URL with no query or fragment.
	URL string
	// CABundle is the PEM of the certificates that verify the webhooks'
	// serving certificate; empty leaves it to a CA injector.
	CABundle []byte
	// OwnNamespace is the App's own namespace, which a Kind's webhook
	// leaves out; empty leaves nothing out.
	OwnNamespace string
}

// Service names the Service in front of the webhooks.
type Service struct {
	Namespace, Name string
	// Port is the Service's port; 0 is the API server's default, 443.
	Port int32
	// Path is prefixed to each webhook's own path; empty prefixes
	// nothing.
	Path string
}

// join appends path, a webhook's own path starting with /, to base.
func join(base, path string) string { return strings.TrimSuffix(base, "/") + path }

// Admission returns the clientConfig of the admission webhook served at
// path. c must have no Mistakes.
func (c Client) Admission(path string) admissionregistrationv1.WebhookClientConfig {
	cfg := admissionregistrationv1.WebhookClientConfig{CABundle: c.CABundle}
	if c.Service != nil {
		p := join(c.Service.Path, path)
		cfg.Service = &admissionregistrationv1.ServiceReference{Namespace: c.Service.Namespace, Name: c.Service.Name, Path: &p}
		if c.Service.Port != 0 {
			port := c.Service.Port
			cfg.Service.Port = &port
		}
		return cfg
	}
	u := join(c.URL, path)
	cfg.URL = &u
	return cfg
}

// Conversion returns the clientConfig of the conversion webhook served at
// path, for a CRD's conversion stanza. c must have no Mistakes.
func (c Client) Conversion(path string) *apiextensionsv1.WebhookClientConfig {
	a := c.Admission(path)
	cfg := &apiextensionsv1.WebhookClientConfig{URL: a.URL, CABundle: a.CABundle}
	if s := a.Service; s != nil {
		cfg.Service = &apiextensionsv1.ServiceReference{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
	}
	return cfg
}

package kube

import (
	"fmt"
	"net/url"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"

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

// mistakes returns an error for each mistake in c, named by field.
func (c WebhookClient) mistakes(field string) []error {
	var errs []error
	switch {
	case c.Service == nil && c.URL == "":
		errs = append(errs, fmt.Errorf("%s names neither a Service nor a URL", field))
	case c.Service != nil && c.URL != "":
		errs = append(errs, fmt.Errorf("%s names both a Service and the URL %q: it takes one", field, c.URL))
	case c.Service != nil:
		s := c.Service
		if s.Namespace == "" {
			errs = append(errs, fmt.Errorf("%s.Service.Namespace is missing", field))
		} else if p := validation.IsDNS1123Label(s.Namespace); len(p) > 0 {
			errs = append(errs, fmt.Errorf("%s.Service.Namespace %q: %s", field, s.Namespace, strings.Join(p, "; ")))
		}
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("%s.Service.Name is missing", field))
		} else if p := validation.IsDNS1035Label(s.Name); len(p) > 0 {
			errs = append(errs, fmt.Errorf("%s.Service.Name %q: %s", field, s.Name, strings.Join(p, "; ")))
		}
		if s.Port < 0 || s.Port > 65535 {
			errs = append(errs, fmt.Errorf("%s.Service.Port %d is not a port (1 to 65535, or 0 for 443)", field, s.Port))
		}
		errs = append(errs, servicePathMistakes(field, s.Path)...)
	default:
		u, err := url.Parse(c.URL)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s.URL %q: %w", field, c.URL, err))
		case u.Scheme != "https":
			errs = append(errs, fmt.Errorf("%s.URL %q is not https: the API server calls webhooks over TLS only", field, c.URL))
		case u.Host == "":
			errs = append(errs, fmt.Errorf("%s.URL %q has no host", field, c.URL))
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			errs = append(errs, fmt.Errorf("%s.URL %q has a query, a fragment or a user, which the API server refuses", field, c.URL))
		}
	}
	if c.OwnNamespace != "" {
		if p := validation.IsDNS1123Label(c.OwnNamespace); len(p) > 0 {
			errs = append(errs, fmt.Errorf("%s.OwnNamespace %q: %s", field, c.OwnNamespace, strings.Join(p, "; ")))
		}
	}
	return errs
}

// config returns what domain/webhookconfig reads of c.
func (c WebhookClient) config() webhookconfig.Client {
	cfg := webhookconfig.Client{URL: c.URL, CABundle: c.CABundle, OwnNamespace: c.OwnNamespace}
	if s := c.Service; s != nil {
		cfg.Service = &webhookconfig.Service{Namespace: s.Namespace, Name: s.Name, Port: s.Port, Path: s.Path}
		if cfg.OwnNamespace == "" {
			cfg.OwnNamespace = s.Namespace
		}
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

// servicePathMistakes returns an error for each mistake in path, a
// WebhookService's Path, named by field: the API server refuses a
// service path that does not start with a slash, or has a segment that
// is empty or no DNS subdomain, such as /Hooks, /a//b or /a/../b
// (k8s.io/apiserver's ValidateWebhookService); a slash alone, or one at
// the end, is taken.
func servicePathMistakes(field, path string) []error {
	if path == "" || path == "/" {
		return nil
	}
	if !strings.HasPrefix(path, "/") {
		return []error{fmt.Errorf("%s.Service.Path %q does not start with /", field, path)}
	}
	var errs []error
	for i, seg := range strings.Split(strings.TrimSuffix(path[1:], "/"), "/") {
		if seg == "" {
			errs = append(errs, fmt.Errorf("%s.Service.Path %q: segment %d is empty, which the API server refuses", field, path, i))
		} else if p := validation.IsDNS1123Subdomain(seg); len(p) > 0 {
			errs = append(errs, fmt.Errorf("%s.Service.Path %q: segment %d, %q, is no DNS subdomain, which the API server refuses: %s", field, path, i, seg, strings.Join(p, "; ")))
		}
	}
	return errs
}

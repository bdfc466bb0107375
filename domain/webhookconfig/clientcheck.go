package webhookconfig

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Mistakes returns an error for each mistake in c, each named by field,
// the name the end user gave c, such as WebhookClient: neither or both of
// Service and URL; a Service without a Namespace or a Name, or with one
// the API server refuses, a Port out of range or a Path it refuses; a URL
// that is not https, has no host, or has a query, a fragment or a user;
// and an OwnNamespace that is no namespace's name. It reads c as the end
// user declared it, before an empty OwnNamespace defaults to the
// Service's.
func (c Client) Mistakes(field string) []error {
	var errs []error
	switch {
	case c.Service == nil && c.URL == "":
		errs = append(errs, fmt.Errorf("%s names neither a Service nor a URL", field))
	case c.Service != nil && c.URL != "":
		errs = append(errs, fmt.Errorf("%s names both a Service and the URL %q: it takes one", field, c.URL))
	case c.Service != nil:
		errs = append(errs, c.Service.mistakes(field+".Service")...)
	default:
		errs = append(errs, urlMistakes(field+".URL", c.URL)...)
	}
	if c.OwnNamespace != "" {
		if p := validation.IsDNS1123Label(c.OwnNamespace); len(p) > 0 {
			errs = append(errs, fmt.Errorf("%s.OwnNamespace %q: %s", field, c.OwnNamespace, strings.Join(p, "; ")))
		}
	}
	return errs
}

// mistakes returns an error for each mistake in s, named by field.
func (s Service) mistakes(field string) []error {
	var errs []error
	if s.Namespace == "" {
		errs = append(errs, fmt.Errorf("%s.Namespace is missing", field))
	} else if p := validation.IsDNS1123Label(s.Namespace); len(p) > 0 {
		errs = append(errs, fmt.Errorf("%s.Namespace %q: %s", field, s.Namespace, strings.Join(p, "; ")))
	}
	if s.Name == "" {
		errs = append(errs, fmt.Errorf("%s.Name is missing", field))
	} else if p := validation.IsDNS1035Label(s.Name); len(p) > 0 {
		errs = append(errs, fmt.Errorf("%s.Name %q: %s", field, s.Name, strings.Join(p, "; ")))
	}
	if s.Port < 0 || s.Port > 65535 {
		errs = append(errs, fmt.Errorf("%s.Port %d is not a port (1 to 65535, or 0 for 443)", field, s.Port))
	}
	return append(errs, servicePathMistakes(field+".Path", s.Path)...)
}

// urlMistakes returns the mistake in raw, a webhook's URL, named by
// field: one the API server refuses or can't call over TLS.
func urlMistakes(field, raw string) []error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return []error{fmt.Errorf("%s %q: %w", field, raw, err)}
	case u.Scheme != "https":
		return []error{fmt.Errorf("%s %q is not https: the API server calls webhooks over TLS only", field, raw)}
	case u.Host == "":
		return []error{fmt.Errorf("%s %q has no host", field, raw)}
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return []error{fmt.Errorf("%s %q has a query, a fragment or a user, which the API server refuses", field, raw)}
	}
	return nil
}

// servicePathMistakes returns an error for each mistake in path, a
// Service's Path, named by field: the API server refuses a service path
// that does not start with a slash, or has a segment that is empty or no
// DNS subdomain, such as /Hooks, /a//b or /a/../b (k8s.io/apiserver's
// ValidateWebhookService); a slash alone, or one at the end, is taken.
func servicePathMistakes(field, path string) []error {
	if path == "" || path == "/" {
		return nil
	}
	if !strings.HasPrefix(path, "/") {
		return []error{fmt.Errorf("%s %q does not start with /", field, path)}
	}
	var errs []error
	for i, seg := range strings.Split(strings.TrimSuffix(path[1:], "/"), "/") {
		if seg == "" {
			errs = append(errs, fmt.Errorf("%s %q: segment %d is empty, which the API server refuses", field, path, i))
		} else if p := validation.IsDNS1123Subdomain(seg); len(p) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: segment %d, %q, is no DNS subdomain, which the API server refuses: %s", field, path, i, seg, strings.Join(p, "; ")))
		}
	}
	return errs
}

package webhookconfig_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/webhookconfig"
)

func TestClient_Mistakes_names_every_mistake_by_field(t *testing.T) {
	for _, c := range []struct {
		name   string
		client webhookconfig.Client
		want   []string
	}{
		{"a Service", webhookconfig.Client{Service: &webhookconfig.Service{Namespace: "ops", Name: "hooks", Port: 443, Path: "/hooks/"}}, nil},
		{"a URL", webhookconfig.Client{URL: "https://127.0.0.1:9443/a", OwnNamespace: "ops"}, nil},
		{"neither", webhookconfig.Client{}, []string{"C names neither a Service nor a URL"}},
		{"both", webhookconfig.Client{Service: &webhookconfig.Service{Namespace: "ops", Name: "hooks"}, URL: "https://h"},
			[]string{`C names both a Service and the URL "https://h": it takes one`}},
		{"every mistake of a Service at once", webhookconfig.Client{Service: &webhookconfig.Service{Port: 70000, Path: "hooks"}, OwnNamespace: "Ops"}, []string{
			"C.Service.Namespace is missing",
			"C.Service.Name is missing",
			"C.Service.Port 70000 is not a port (1 to 65535, or 0 for 443)",
			`C.Service.Path "hooks" does not start with /`,
			`C.OwnNamespace "Ops": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{"a Service path's segments", webhookconfig.Client{Service: &webhookconfig.Service{Namespace: "ops", Name: "hooks", Path: "/a//B"}}, []string{
			`C.Service.Path "/a//B": segment 1 is empty, which the API server refuses`,
			`C.Service.Path "/a//B": segment 2, "B", is no DNS subdomain, which the API server refuses: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		}},
		{"a URL over plain http", webhookconfig.Client{URL: "http://h"}, []string{`C.URL "http://h" is not https: the API server calls webhooks over TLS only`}},
		{"a URL without a host", webhookconfig.Client{URL: "https:///a"}, []string{`C.URL "https:///a" has no host`}},
		{"a URL with a query", webhookconfig.Client{URL: "https://h/?a=b"}, []string{`C.URL "https://h/?a=b" has a query, a fragment or a user, which the API server refuses`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, err := range c.client.Mistakes("C") {
				got = append(got, err.Error())
			}
			require.Equal(t, c.want, got)
		})
	}
}

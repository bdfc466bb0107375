package layers

import "strings"

// Module is loam's library module, whose packages the Rules constrain.
const Module = "github.com/loam-dev/loam"

// Rules are loam's dependency rules, as docs/architecture.md states them.
func Rules() []Rule {
	own := func(p string) string { return Module + "/" + p }
	return []Rule{
		{
			Scope: own("domain"),
			Why:   "the domain decides and never does I/O: it imports the standard library without its network, process and OS packages (net/url, a parser, is allowed), ports, and value packages of apimachinery, apiextensions, admission and authentication reviews and OTel baggage only",
			Allow: domainMayImport,
		},
		{
			Scope: own("ports"),
			Why:   "ports imports nothing of ours: the arrows run domain → ports ← adapters",
			Deny:  []string{own("domain"), own("adapters"), own("kube"), own("app"), own("internal")},
		},
		{
			Scope: own("adapters"),
			Why:   "adapters implement ports and never reach back into the facade or the domain's callers",
			Deny:  []string{own("kube")},
		},
		{
			Scope: own("app"),
			Why:   "the app runtime knows nothing of Kubernetes' controllers",
			Deny:  []string{own("kube"), own("adapters"), own("domain"), own("ports")},
		},
		{
			Scope: Module,
			Why:   "loam is built on client-go's own parts: controller-runtime and controller-tools never come back as a convenience",
			Deny:  []string{"sigs.k8s.io/controller-runtime", "sigs.k8s.io/controller-tools"},
		},
		{
			Scope: Module,
			Why:   "the benchmarks module measures the library against controller-runtime; the library never depends on it",
			Deny:  []string{own("benchmarks")},
		},
		{
			Scope: Module,
			Why:   "the library's module never links the API server: only kubetest and examples, modules of their own, do",
			Deny:  []string{"k8s.io/kubernetes", "go.etcd.io/etcd/server"},
		},
	}
}

// domainMayImport is the domain's allow-list.
func domainMayImport(imp string) bool {
	switch {
	case imp == "net/url":
		// A parser, strings in and values out, as a webhook URL's check
		// needs; it opens nothing, unlike the rest of net.
		return true
	case Standard(imp):
		for _, io := range []string{"net", "os", "syscall", "io/ioutil", "plugin", "unsafe", "crypto/tls", "log"} {
			if Under(imp, io) {
				return false
			}
		}
		return true
	case Under(imp, Module+"/domain"), Under(imp, Module+"/ports"):
		return true
	case Under(imp, "k8s.io/apimachinery/pkg/apis"),
		Under(imp, "k8s.io/apimachinery/pkg/api/resource"),
		Under(imp, "k8s.io/apimachinery/pkg/api/equality"),
		Under(imp, "k8s.io/apimachinery/pkg/runtime/schema"),
		Under(imp, "k8s.io/apimachinery/pkg/types"),
		Under(imp, "k8s.io/apimachinery/pkg/util/intstr"),
		Under(imp, "k8s.io/apimachinery/pkg/util/validation"),
		// Selectors' parsers: strings in, values out, as a Settings check
		// needs.
		imp == "k8s.io/apimachinery/pkg/labels",
		imp == "k8s.io/apimachinery/pkg/fields",
		// KEP-5866's hash and shard selectors, which the API server shards
		// lists and watches with: pure functions over strings, which the
		// domain's shard tests pin their hash to.
		imp == "k8s.io/apimachinery/pkg/sharding",
		Under(imp, "k8s.io/apiextensions-apiserver/pkg/apis"),
		// The review types of admission webhooks, and the user info they
		// carry: plain structs a webhook decision decodes and encodes.
		imp == "k8s.io/api/admission/v1",
		imp == "k8s.io/api/authentication/v1",
		// The webhook configurations' types, which domain/webhookconfig
		// writes as domain/crd writes a CRD: plain structs.
		imp == "k8s.io/api/admissionregistration/v1",
		imp == "go.opentelemetry.io/otel/baggage",
		imp == "go.opentelemetry.io/otel/attribute":
		return true
	}
	return strings.HasPrefix(imp, Module+"/domain/")
}

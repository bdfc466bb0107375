// Command webhookcerts issues the serving certificate of an operator's
// webhooks at deploy time, for a cluster without cert-manager, such as
// kind: a CA of its own, valid for a year, and a certificate it signs for
// the webhooks' Service. It writes, to the directory -out:
//
//   - ca.crt, the CA's certificate (its key is not kept: run the command
//     again for a new certificate, and apply again);
//   - secret.yaml, the kubernetes.io/tls Secret the operator's Deployment
//     mounts, with tls.crt, tls.key and ca.crt;
//   - kustomization.yaml, which applies -base with the Secret, and patches
//     the caBundle of every clientConfig in -base that names the Service:
//     a CRD's conversion and each webhook of a webhook configuration.
//
// For the Memcached operator, from examples/:
//
//	go run ./cmd/webhookcerts -base memcached/deploy -out ../bin/memcached-deploy-kind
//	kubectl apply -k ../bin/memcached-deploy-kind
//
// -out holds a private key: keep it out of version control (bin/ is
// ignored), and outside -base, which kustomize would refuse as a cycle.
// The command exits 2 for a flag that is missing or wrong, and 1 when
// -base doesn't read or names no clientConfig of the Service, or -out is
// inside it or can't be written, naming every mistake.
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// Options are the command's flags.
type Options struct {
	// Base is the kustomization directory of the operator, whose files
	// name the Service in clientConfigs.
	Base string
	// Out is the directory to write; it is created if need be.
	Out string
	// Namespace and Service name the Service in front of the webhooks,
	// whose DNS names the certificate is for.
	Namespace, Service string
	// Secret names the Secret to write, in Namespace.
	Secret string
	// Validity is how long the CA and the certificate are valid.
	Validity time.Duration
	// Now is when they become valid; the zero Time is time.Now's.
	Now time.Time
}

func main() {
	opts := Options{}
	flag.StringVar(&opts.Base, "base", "", "the operator's kustomization directory, such as memcached/deploy (required)")
	flag.StringVar(&opts.Out, "out", "", "the directory to write the kustomization, the Secret and ca.crt to (required)")
	flag.StringVar(&opts.Namespace, "namespace", "memcached-system", "the namespace of the webhooks' Service and of the Secret")
	flag.StringVar(&opts.Service, "service", "memcached-webhooks", "the Service in front of the webhooks")
	flag.StringVar(&opts.Secret, "secret", "memcached-webhooks-tls", "the kubernetes.io/tls Secret the operator mounts")
	flag.DurationVar(&opts.Validity, "validity", 365*24*time.Hour, "how long the CA and the certificate are valid")
	flag.Parse()
	if err := opts.check(); err != nil {
		fmt.Fprintln(os.Stderr, "webhookcerts:", err)
		flag.Usage()
		os.Exit(2) //nolint:forbidigo // a deploy step for people, not an App, as make image's builder
	}
	if err := Run(opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhookcerts:", err)
		os.Exit(1) //nolint:forbidigo // a deploy step for people, not an App
	}
}

// check reports every flag that is missing or wrong, at once.
func (o Options) check() error {
	var errs []error
	if o.Base == "" {
		errs = append(errs, errors.New("-base: missing"))
	}
	if o.Out == "" {
		errs = append(errs, errors.New("-out: missing"))
	}
	for _, f := range []struct{ flag, value string }{{"-namespace", o.Namespace}, {"-service", o.Service}} {
		if p := validation.IsDNS1123Label(f.value); len(p) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %v", f.flag, f.value, p))
		}
	}
	if p := validation.IsDNS1123Subdomain(o.Secret); len(p) > 0 {
		errs = append(errs, fmt.Errorf("-secret %q: %v", o.Secret, p))
	}
	if o.Validity <= 0 {
		errs = append(errs, fmt.Errorf("-validity %v: want a positive duration", o.Validity))
	}
	return errors.Join(errs...)
}

// Run finds the clientConfigs of opts.Base that name the Service, issues
// the CA and the certificate, writes the three files to opts.Out, and
// says so on stdout. It fails, writing nothing, when Base doesn't read
// or names no such clientConfig; and when a file can't be written.
func Run(opts Options, stdout io.Writer) error {
	patches, err := findClientConfigs(opts.Base, opts.Namespace, opts.Service)
	if err != nil {
		return err
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	caPEM, certPEM, keyPEM, err := issue(opts.Namespace, opts.Service, now, opts.Validity)
	if err != nil {
		return err
	}
	base, err := relativeBase(opts.Base, opts.Out)
	if err != nil {
		return err
	}
	secret, err := sigsyaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"type":       "kubernetes.io/tls",
		"metadata":   map[string]any{"name": opts.Secret, "namespace": opts.Namespace},
		"data":       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": caPEM},
	})
	if err != nil {
		return err
	}
	k, err := kustomization(base, patches, caPEM)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{"ca.crt", caPEM, 0o644}, {"secret.yaml", secret, 0o600}, {"kustomization.yaml", k, 0o644}} {
		if err := os.WriteFile(filepath.Join(opts.Out, f.name), f.data, f.mode); err != nil { //nolint:forbidigo // the files it is told to write
			return fmt.Errorf("-out: %w", err)
		}
	}
	_, err = fmt.Fprintf(stdout, "wrote %s: the Secret %s/%s and %d caBundle patches over %s, for %s.%s.svc until %s; apply with kubectl apply -k %s\n",
		opts.Out, opts.Namespace, opts.Secret, len(patches), opts.Base, opts.Service, opts.Namespace, now.Add(opts.Validity).UTC().Format(time.DateOnly), opts.Out)
	return err
}

// clientConfig is one clientConfig of the base that names the Service:
// the object it is in, and the JSON pointer of its caBundle.
type clientConfig struct {
	kind, name string
	path       string
}

// findClientConfigs returns every clientConfig that names the Service
// namespace/service in the files base's kustomization lists: a CRD's
// spec.conversion.webhook.clientConfig, and each webhook's of a
// Validating- or MutatingWebhookConfiguration. It fails when base's files
// don't read, and when it finds none.
func findClientConfigs(base, namespace, service string) ([]clientConfig, error) {
	b, err := os.ReadFile(filepath.Join(base, "kustomization.yaml")) //nolint:forbidigo // the base it is told to read
	if err != nil {
		return nil, fmt.Errorf("-base: %w", err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := sigsyaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("-base: %s: %w", filepath.Join(base, "kustomization.yaml"), err)
	}
	names := func(cfg map[string]any) bool {
		s, _ := cfg["service"].(map[string]any)
		return s != nil && s["namespace"] == namespace && s["name"] == service
	}
	var found []clientConfig
	var errs []error
	for _, r := range k.Resources {
		path := filepath.Join(base, r)
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			continue // another kustomization, whose objects aren't this one's to patch
		}
		data, err := os.ReadFile(path) //nolint:forbidigo // the base it is told to read
		if err != nil {
			errs = append(errs, fmt.Errorf("-base: %w", err))
			continue
		}
		docs := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj map[string]any
			if err := docs.Decode(&obj); err != nil {
				if !errors.Is(err, io.EOF) {
					errs = append(errs, fmt.Errorf("-base: %s: %w", path, err))
				}
				break
			}
			kind, _ := obj["kind"].(string)
			meta, _ := obj["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			switch kind {
			case "CustomResourceDefinition":
				spec, _ := obj["spec"].(map[string]any)
				conv, _ := spec["conversion"].(map[string]any)
				webhook, _ := conv["webhook"].(map[string]any)
				if cfg, _ := webhook["clientConfig"].(map[string]any); names(cfg) {
					found = append(found, clientConfig{kind, name, "/spec/conversion/webhook/clientConfig/caBundle"})
				}
			case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
				hooks, _ := obj["webhooks"].([]any)
				for i, h := range hooks {
					hook, _ := h.(map[string]any)
					if cfg, _ := hook["clientConfig"].(map[string]any); names(cfg) {
						found = append(found, clientConfig{kind, name, fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i)})
					}
				}
			}
		}
	}
	if len(errs) == 0 && len(found) == 0 {
		errs = append(errs, fmt.Errorf("-base: no clientConfig in %s names the Service %s/%s", base, namespace, service))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return found, nil
}

// kustomization returns the kustomization.yaml of -out: base and the
// Secret, with a JSON patch per object that adds caPEM to each of its
// clientConfigs.
func kustomization(base string, configs []clientConfig, caPEM []byte) ([]byte, error) {
	type target struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value []byte `json:"value"` // base64, as caBundle is
	}
	type patch struct {
		Target target `json:"target"`
		Patch  string `json:"patch"`
	}
	var order []target
	ops := map[target][]op{}
	for _, c := range configs {
		t := target{c.kind, c.name}
		if _, ok := ops[t]; !ok {
			order = append(order, t)
		}
		ops[t] = append(ops[t], op{Op: "add", Path: c.path, Value: caPEM})
	}
	var patches []patch
	for _, t := range order {
		p, err := sigsyaml.Marshal(ops[t])
		if err != nil {
			return nil, err
		}
		patches = append(patches, patch{Target: t, Patch: string(p)})
	}
	k, err := sigsyaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{base, "secret.yaml"},
		"patches":    patches,
	})
	if err != nil {
		return nil, err
	}
	return append([]byte("# Written by examples/cmd/webhookcerts: the serving certificate of the\n# webhooks, and the CA that trusts it in every clientConfig of the base.\n"), k...), nil
}

// relativeBase returns base relative to out, as out's kustomization names
// it. It fails when out is base or inside it, a cycle kustomize refuses.
func relativeBase(base, out string) (string, error) {
	b, err := filepath.Abs(base)
	if err != nil {
		return "", fmt.Errorf("-base: %w", err)
	}
	o, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("-out: %w", err)
	}
	rel, err := filepath.Rel(o, b)
	if err != nil {
		return "", fmt.Errorf("-base relative to -out: %w", err)
	}
	if up, _ := filepath.Rel(b, o); up != ".." && !strings.HasPrefix(up, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("-out %s is inside -base %s: kustomize refuses a kustomization inside its base; write it beside", out, base)
	}
	return filepath.ToSlash(rel), nil
}

// issue returns, PEM-encoded, a new CA's certificate, and a serving
// certificate it signs for the Service's DNS names with its PKCS #8
// key, both ECDSA P-256 and valid from now for validity.
func issue(namespace, service string, now time.Time, validity time.Duration) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	caSerial, err := serial()
	if err != nil {
		return nil, nil, nil, err
	}
	ca := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: "webhookcerts CA for " + service + "." + namespace},
		NotBefore:             now.Add(-time.Minute), // a clock a little behind still trusts it
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	leafSerial, err := serial()
	if err != nil {
		return nil, nil, nil, err
	}
	svc := service + "." + namespace + ".svc"
	leaf := &x509.Certificate{
		SerialNumber: leafSerial,
		Subject:      pkix.Name{CommonName: svc},
		DNSNames:     []string{svc, svc + ".cluster.local"},
		NotBefore:    ca.NotBefore,
		NotAfter:     ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// serial returns a random 128-bit serial number, as RFC 5280 asks of a
// CA that they be unique.
func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

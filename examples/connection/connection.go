// Package connection fills a kube.Connection the two ways the examples'
// operators reach their API server: in a pod, from what the kubelet gives
// every container, and from a kubeconfig, for local development. They are
// the end user's code, not loam's: loam reads no kubeconfig, no token file
// and no environment variable itself, so each program picks its own
// sources and variable names.
package connection

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
	"github.com/loam-dev/loam/kube"
)

// ServiceAccount is where the kubelet mounts the pod's service account: its
// token, and the cluster's CA.
const ServiceAccount = "/var/run/secrets/kubernetes.io/serviceaccount/"

// InPod fills the Connection of a pod from what the kubelet gives every
// container: the API server's address in two variables, and the service
// account's CA and token in dir, read through s.Host.FS.
func InPod(ctx context.Context, s *app.Setup, dir string) (kube.Connection, error) {
	env := func(name string) config.Value[string] { return config.Env(s.Process.Environment, name) }

	ca, err := ReadFile(s.Host.FS, dir+"ca.crt")
	if err != nil {
		return kube.Connection{}, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return kube.Connection{}, errors.New("the service account's ca.crt holds no PEM certificate")
	}

	return config.Struct(func(r *config.Resolver) kube.Connection {
		return kube.Connection{
			// The kubelet sets both in every container. JoinHostPort brackets an IPv6 host.
			Server: net.JoinHostPort(r.Get(env("KUBERNETES_SERVICE_HOST")), r.Get(env("KUBERNETES_SERVICE_PORT"))),
			TLS:    &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			// The Client calls it at most once a minute, so a token the
			// kubelet rotates is picked up within a minute.
			Token: func(context.Context) (string, error) {
				b, err := ReadFile(s.Host.FS, dir+"token")
				return string(bytes.TrimSpace(b)), err
			},
		}
	}).Read(ctx)
}

// FromKubeconfig fills a Connection from the kubeconfig at path, for local
// development: the API server, CA and client certificate or token of its
// current context, embedded in the file, as kind and k3s write them. It
// reads the file through fsys, and nothing else: clientcmd.Load reads no
// KUBECONFIG and no home directory.
//
// Every field of the current context's cluster, user and context that it
// would otherwise ignore is an error naming the field, all of them joined
// in one: a kubeconfig whose exec plugin, token file or proxy was dropped
// silently would connect as someone else, or not at all, with no word why.
// A cloud's credentials belong in a Token function built on the cloud's
// SDK, as docs/kubernetes.md "Connecting to cloud clusters" shows.
func FromKubeconfig(fsys app.FS, path string) (kube.Connection, error) {
	b, err := ReadFile(fsys, path)
	if err != nil {
		return kube.Connection{}, err
	}
	kc, err := clientcmd.Load(b)
	if err != nil {
		return kube.Connection{}, err
	}
	current, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return kube.Connection{}, fmt.Errorf("the kubeconfig has no context %q", kc.CurrentContext)
	}
	cluster, user := kc.Clusters[current.Cluster], kc.AuthInfos[current.AuthInfo]
	var errs []error
	if cluster == nil {
		errs = append(errs, fmt.Errorf("kubeconfig contexts[%s].cluster: the kubeconfig has no cluster %q", kc.CurrentContext, current.Cluster))
	}
	if user == nil {
		errs = append(errs, fmt.Errorf("kubeconfig contexts[%s].user: the kubeconfig has no user %q", kc.CurrentContext, current.AuthInfo))
	}
	if current.Namespace != "" {
		errs = append(errs, fmt.Errorf("kubeconfig contexts[%s].namespace: a context's namespace is not used: the program's own settings name the namespaces it watches", kc.CurrentContext))
	}
	if cluster == nil || user == nil {
		return kube.Connection{}, errors.Join(errs...)
	}
	errs = append(errs, unsupportedCluster("kubeconfig clusters["+current.Cluster+"]", cluster)...)
	errs = append(errs, unsupportedUser("kubeconfig users["+current.AuthInfo+"]", user)...)

	conn := kube.Connection{TLS: &tls.Config{MinVersion: tls.VersionTLS12}}
	if u, err := url.Parse(cluster.Server); err != nil {
		errs = append(errs, fmt.Errorf("kubeconfig clusters[%s].server: %w", current.Cluster, err))
	} else if u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		// A Connection dials host:port over TLS, and sends each request
		// to the API's own paths: a scheme, path or query would be lost.
		errs = append(errs, fmt.Errorf("kubeconfig clusters[%s].server: %q is not https://host:port: only an API server at the root of an https address is supported", current.Cluster, cluster.Server))
	} else {
		conn.Server = u.Host // host:port
	}
	roots := x509.NewCertPool()
	switch {
	case len(cluster.CertificateAuthorityData) > 0:
		if !roots.AppendCertsFromPEM(cluster.CertificateAuthorityData) {
			errs = append(errs, fmt.Errorf("kubeconfig clusters[%s].certificate-authority-data: holds no PEM certificate", current.Cluster))
		}
		conn.TLS.RootCAs = roots
	case cluster.CertificateAuthority == "":
		// unsupportedCluster has reported a CA file; without either, the
		// system's roots would be trusted, which is not what kind or k3s mean.
		errs = append(errs, fmt.Errorf("kubeconfig clusters[%s].certificate-authority-data: the cluster embeds no CA", current.Cluster))
	}
	if len(user.ClientCertificateData) > 0 || len(user.ClientKeyData) > 0 {
		cert, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
		if err != nil {
			errs = append(errs, fmt.Errorf("kubeconfig users[%s].client-certificate-data: %w", current.AuthInfo, err))
		}
		conn.TLS.Certificates = []tls.Certificate{cert}
	}
	if token := user.Token; token != "" {
		conn.Token = func(context.Context) (string, error) { return token, nil }
	}
	if err := errors.Join(errs...); err != nil {
		return kube.Connection{}, err
	}
	return conn, nil
}

// supportHint is where a field FromKubeconfig does not support is done
// instead: a Token function, built in the program.
const supportHint = `build a Token function (docs/kubernetes.md "Connecting to cloud clusters")`

// unsupportedCluster reports each field of the cluster at where that
// FromKubeconfig does not support. Extensions are not reported: they are
// tools' notes (minikube writes one), and no client acts on them.
func unsupportedCluster(where string, c *clientcmdapi.Cluster) []error {
	var errs []error
	field := func(set bool, name, why string) {
		if set {
			errs = append(errs, fmt.Errorf("%s.%s: %s", where, name, why))
		}
	}
	field(c.CertificateAuthority != "", "certificate-authority",
		"CA files are not supported: embed the CA as certificate-authority-data (kubectl config view --raw --flatten)")
	field(c.InsecureSkipTLSVerify, "insecure-skip-tls-verify",
		"skipping the server's certificate check is not supported: embed its CA as certificate-authority-data")
	field(c.TLSServerName != "", "tls-server-name",
		"a TLS server name is not supported: build the Connection with TLS.ServerName in the program")
	field(c.ProxyURL != "", "proxy-url",
		"proxies are not supported: the Client dials the server through the Host")
	field(c.DisableCompression, "disable-compression",
		"disabling compression is not supported")
	return errs
}

// unsupportedUser reports each field of the user at where that
// FromKubeconfig does not support: it reads an embedded token and an
// embedded client certificate and key, and nothing else.
func unsupportedUser(where string, u *clientcmdapi.AuthInfo) []error {
	var errs []error
	field := func(set bool, name, why string) {
		if set {
			errs = append(errs, fmt.Errorf("%s.%s: %s", where, name, why))
		}
	}
	field(u.Exec != nil, "exec", "exec plugins are not supported: "+supportHint)
	field(u.AuthProvider != nil, "auth-provider", "auth providers are not supported: "+supportHint)
	field(u.TokenFile != "", "tokenFile", "token files are not supported: embed the token as token, or "+supportHint)
	field(u.ClientCertificate != "", "client-certificate",
		"certificate files are not supported: embed the certificate as client-certificate-data (kubectl config view --raw --flatten)")
	field(u.ClientKey != "", "client-key",
		"key files are not supported: embed the key as client-key-data (kubectl config view --raw --flatten)")
	field(u.Username != "", "username", "basic authentication is not supported: use a token or a client certificate")
	field(u.Password != "", "password", "basic authentication is not supported: use a token or a client certificate")
	field(u.Impersonate != "", "as", "impersonation is not supported")
	field(u.ImpersonateUID != "", "as-uid", "impersonation is not supported")
	field(len(u.ImpersonateGroups) > 0, "as-groups", "impersonation is not supported")
	field(len(u.ImpersonateUserExtra) > 0, "as-user-extra", "impersonation is not supported")
	return errs
}

// ReadFile reads the whole file name through fsys.
func ReadFile(fsys app.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(f)
}

// Connect fills the Connection of a program that runs both ways: from the
// kubeconfig the variable kubeconfigVariable names, when it is set, for
// local development; otherwise from the pod's service account in
// ServiceAccount. The variable's name is the program's own choice.
func Connect(ctx context.Context, s *app.Setup, kubeconfigVariable string) (kube.Connection, error) {
	path, ok := s.Process.Environment.LookupEnv(kubeconfigVariable)
	if ok && path != "" {
		conn, err := FromKubeconfig(s.Host.FS, path)
		if err != nil {
			return kube.Connection{}, fmt.Errorf("%s %s: %w", kubeconfigVariable, path, err)
		}
		return conn, nil
	}
	return InPod(ctx, s, ServiceAccount)
}

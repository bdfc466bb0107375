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
	if cluster == nil || user == nil {
		return kube.Connection{}, errors.New("the kubeconfig's current context names no cluster or no user")
	}
	u, err := url.Parse(cluster.Server)
	if err != nil {
		return kube.Connection{}, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cluster.CertificateAuthorityData) {
		return kube.Connection{}, errors.New("the kubeconfig's cluster embeds no CA")
	}
	conn := kube.Connection{
		Server: u.Host, // host:port
		TLS:    &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}
	if len(user.ClientCertificateData) > 0 {
		cert, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
		if err != nil {
			return kube.Connection{}, err
		}
		conn.TLS.Certificates = []tls.Certificate{cert}
	}
	if token := user.Token; token != "" {
		conn.Token = func(context.Context) (string, error) { return token, nil }
	}
	return conn, nil
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

package connection

import (
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// apiServer answers any request with an empty namespace list, and
// remembers who made each: the bearer token, or the client certificate.
type apiServer struct {
	mu   sync.Mutex
	whom []string
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who := r.Header.Get("Authorization")
	if who == "" && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		who = "cert:" + r.TLS.PeerCertificates[0].Subject.CommonName
	}
	a.mu.Lock()
	a.whom = append(a.whom, who)
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[]}`))
}

func (a *apiServer) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.whom[len(a.whom)-1]
}

// serveAPI serves api over TLS at addr on h's network, with a certificate
// for hosts, until the test ends.
func serveAPI(t *testing.T, h *apptest.Host, ca *apptest.CA, addr string, api *apiServer, hosts ...string) {
	t.Helper()
	ln, err := h.Listen(t.Context(), "tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: api, TLSConfig: ca.ServerConfig(hosts...), ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
}

// list lists namespaces through a clientset on conn.
func list(t *testing.T, s *app.Setup, conn kube.Connection) {
	t.Helper()
	c, err := kube.NewClient(s, conn)
	require.NoError(t, err)
	t.Cleanup(func() { c.RoundTripper().(interface{ CloseIdleConnections() }).CloseIdleConnections() })
	kc, err := kubernetes.NewForConfig(c.Config())
	require.NoError(t, err)
	_, err = kc.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
}

func TestInPod_reads_the_service_account_and_picks_up_a_rotated_token(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ca, api := apptest.NewCA(t), &apiServer{}
		h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{
			"serviceaccount/ca.crt": ca.PEM(),
			"serviceaccount/token":  []byte("first-token\n"),
		}))
		// In a pod, the API server is the kubernetes Service's cluster IP,
		// which its certificate names.
		serveAPI(t, h, ca, "10.96.0.1:443", api, "10.96.0.1")
		s := &app.Setup{
			Host:      h.Host(),
			Process:   app.Process{Environment: apptest.Env{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}},
			Telemetry: apptest.NewTelemetry().Telemetry,
		}

		// The test's own directory stands in for ServiceAccount.
		require.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/", ServiceAccount)
		conn, err := InPod(t.Context(), s, h.Path("serviceaccount/"))
		require.NoError(t, err)
		require.Equal(t, "10.96.0.1:443", conn.Server)
		c, err := kube.NewClient(s, conn)
		require.NoError(t, err)
		defer c.RoundTripper().(interface{ CloseIdleConnections() }).CloseIdleConnections()
		kc, err := kubernetes.NewForConfig(c.Config())
		require.NoError(t, err)
		_, err = kc.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Equal(t, "Bearer first-token", api.last())

		h.WriteFile("serviceaccount/token", []byte("rotated-token\n"))
		time.Sleep(time.Minute)
		_, err = kc.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Equal(t, "Bearer rotated-token", api.last(), "the rotation is picked up within a minute")
	})
}

func TestInPod_names_every_missing_variable(t *testing.T) {
	ca := apptest.NewCA(t)
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"sa/ca.crt": ca.PEM()}))
	s := &app.Setup{Host: h.Host(), Process: app.Process{Environment: apptest.Env{}}}
	_, err := InPod(t.Context(), s, h.Path("sa/"))
	require.EqualError(t, err, "config KUBERNETES_SERVICE_HOST: not found\nconfig KUBERNETES_SERVICE_PORT: not found")
}

func TestInPod_rejects_a_CA_file_without_a_certificate(t *testing.T) {
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"sa/ca.crt": []byte("not a certificate")}))
	s := &app.Setup{Host: h.Host(), Process: app.Process{Environment: apptest.Env{}}}
	_, err := InPod(t.Context(), s, h.Path("sa/"))
	require.EqualError(t, err, "the service account's ca.crt holds no PEM certificate")

	_, err = InPod(t.Context(), s, h.Path("missing/"))
	require.ErrorContains(t, err, "ca.crt")
}

// kubeconfig writes a kubeconfig as kind writes one: a cluster, a user
// and a current context, their data embedded.
func kubeconfig(t *testing.T, server string, ca *apptest.CA, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	b, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"kind-dev": {Server: server, CertificateAuthorityData: ca.PEM()}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"kind-dev": user},
		Contexts:       map[string]*clientcmdapi.Context{"kind-dev": {Cluster: "kind-dev", AuthInfo: "kind-dev"}},
		CurrentContext: "kind-dev",
	})
	require.NoError(t, err)
	return b
}

func TestFromKubeconfig_connects_with_the_embedded_client_certificate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ca, api := apptest.NewCA(t), &apiServer{}
		h := apptest.NewHost(t)
		serveAPI(t, h, ca, "127.0.0.1:6443", api, "127.0.0.1")
		cert := ca.ClientCert("kubernetes-admin", "kubeadm:cluster-admins")
		h.WriteFile("kubeconfig", kubeconfig(t, "https://127.0.0.1:6443", ca, &clientcmdapi.AuthInfo{
			ClientCertificateData: cert.CertPEM, ClientKeyData: cert.KeyPEM,
		}))

		conn, err := FromKubeconfig(h.FS(), h.Path("kubeconfig"))
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:6443", conn.Server)
		require.Nil(t, conn.Token, "a certificate, no token")
		list(t, &app.Setup{Host: h.Host(), Telemetry: apptest.NewTelemetry().Telemetry}, conn)
		require.Equal(t, "cert:kubernetes-admin", api.last())
	})
}

func TestFromKubeconfig_connects_with_an_embedded_token(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ca, api := apptest.NewCA(t), &apiServer{}
		h := apptest.NewHost(t)
		serveAPI(t, h, ca, "api.test:443", api, "api.test")
		h.WriteFile("kubeconfig", kubeconfig(t, "https://api.test:443", ca, &clientcmdapi.AuthInfo{Token: "dev-token"}))

		conn, err := FromKubeconfig(h.FS(), h.Path("kubeconfig"))
		require.NoError(t, err)
		list(t, &app.Setup{Host: h.Host(), Telemetry: apptest.NewTelemetry().Telemetry}, conn)
		require.Equal(t, "Bearer dev-token", api.last())
	})
}

// kindConfig is a kubeconfig as kind writes one, for a test to change.
func kindConfig(ca *apptest.CA) *clientcmdapi.Config {
	return &clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"kind-dev": {Server: "https://api.test:443", CertificateAuthorityData: ca.PEM()}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"dev": {Token: "x"}},
		Contexts:       map[string]*clientcmdapi.Context{"kind-dev": {Cluster: "kind-dev", AuthInfo: "dev"}},
		CurrentContext: "kind-dev",
	}
}

func TestFromKubeconfig_reports_every_field_it_does_not_support_by_name(t *testing.T) {
	ca := apptest.NewCA(t)
	h := apptest.NewHost(t)
	const (
		cluster = "kubeconfig clusters[kind-dev]."
		user    = "kubeconfig users[dev]."
		hint    = `build a Token function (docs/kubernetes.md "Connecting to cloud clusters")`
		flatten = " (kubectl config view --raw --flatten)"
		basic   = "basic authentication is not supported: use a token or a client certificate"
	)
	for name, tc := range map[string]struct {
		change func(c *clientcmdapi.Config, cl *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo)
		want   string
	}{
		"good control": {func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {}, ""},
		"server with a trailing slash": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.Server = "https://api.test:443/"
			},
			"",
		},
		"exec": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Exec = &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token"}, APIVersion: "client.authentication.k8s.io/v1beta1"}
			},
			user + "exec: exec plugins are not supported: " + hint,
		},
		"auth-provider": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
			},
			user + "auth-provider: auth providers are not supported: " + hint,
		},
		"tokenFile": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Token, u.TokenFile = "", "/run/token"
			},
			user + "tokenFile: token files are not supported: embed the token as token, or " + hint,
		},
		"client-certificate": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.ClientCertificate = "/home/dev/.minikube/client.crt"
			},
			user + "client-certificate: certificate files are not supported: embed the certificate as client-certificate-data" + flatten,
		},
		"client-key": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.ClientKey = "/home/dev/.minikube/client.key"
			},
			user + "client-key: key files are not supported: embed the key as client-key-data" + flatten,
		},
		"username": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Username = "admin" },
			user + "username: " + basic,
		},
		"password": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Password = "secret" },
			user + "password: " + basic,
		},
		"as": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Impersonate = "jane"
			},
			user + "as: impersonation is not supported",
		},
		"as-uid": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.ImpersonateUID = "1234"
			},
			user + "as-uid: impersonation is not supported",
		},
		"as-groups": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.ImpersonateGroups = []string{"admins"}
			},
			user + "as-groups: impersonation is not supported",
		},
		"as-user-extra": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.ImpersonateUserExtra = map[string][]string{"scopes": {"view"}}
			},
			user + "as-user-extra: impersonation is not supported",
		},
		"client-certificate-data without its key": {
			func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.ClientCertificateData = ca.PEM()
			},
			user + "client-certificate-data: tls: failed to find any PEM data in key input",
		},
		"certificate-authority": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.CertificateAuthority, cl.CertificateAuthorityData = "/home/dev/.minikube/ca.crt", nil
			},
			cluster + "certificate-authority: CA files are not supported: embed the CA as certificate-authority-data" + flatten,
		},
		"certificate-authority-data absent": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.CertificateAuthorityData = nil
			},
			cluster + "certificate-authority-data: the cluster embeds no CA",
		},
		"certificate-authority-data not PEM": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.CertificateAuthorityData = []byte("nope")
			},
			cluster + "certificate-authority-data: holds no PEM certificate",
		},
		"insecure-skip-tls-verify": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.InsecureSkipTLSVerify = true
			},
			cluster + "insecure-skip-tls-verify: skipping the server's certificate check is not supported: embed its CA as certificate-authority-data",
		},
		"tls-server-name": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.TLSServerName = "kubernetes.default"
			},
			cluster + "tls-server-name: a TLS server name is not supported: build the Connection with TLS.ServerName in the program",
		},
		"proxy-url": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.ProxyURL = "socks5://localhost:1080"
			},
			cluster + "proxy-url: proxies are not supported: the Client dials the server through the Host",
		},
		"disable-compression": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.DisableCompression = true
			},
			cluster + "disable-compression: disabling compression is not supported",
		},
		"server with a path": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.Server = "https://rancher.test/k8s/clusters/c-m-1"
			},
			cluster + `server: "https://rancher.test/k8s/clusters/c-m-1" is not https://host:port: only an API server at the root of an https address is supported`,
		},
		"server over http": {
			func(_ *clientcmdapi.Config, cl *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				cl.Server = "http://127.0.0.1:8080"
			},
			cluster + `server: "http://127.0.0.1:8080" is not https://host:port: only an API server at the root of an https address is supported`,
		},
		"namespace": {
			func(c *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.Contexts["kind-dev"].Namespace = "dev"
			},
			"kubeconfig contexts[kind-dev].namespace: a context's namespace is not used: the program's own settings name the namespaces it watches",
		},
		"no such cluster and no such user, both": {
			func(c *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.Contexts["kind-dev"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: "nobody"}
			},
			"kubeconfig contexts[kind-dev].cluster: the kubeconfig has no cluster \"gone\"\n" +
				"kubeconfig contexts[kind-dev].user: the kubeconfig has no user \"nobody\"",
		},
		"no current context": {
			func(c *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.CurrentContext = "gone"
			},
			`the kubeconfig has no context "gone"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := kindConfig(ca)
			tc.change(c, c.Clusters["kind-dev"], c.AuthInfos["dev"])
			b, err := clientcmd.Write(*c)
			require.NoError(t, err)
			h.WriteFile("kubeconfig", b)

			conn, err := FromKubeconfig(h.FS(), h.Path("kubeconfig"))
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, "api.test:443", conn.Server)
				return
			}
			require.EqualError(t, err, tc.want)
			require.Equal(t, kube.Connection{}, conn, "no half-filled Connection")
		})
	}
}

func TestFromKubeconfig_reports_all_its_mistakes_at_once(t *testing.T) {
	ca := apptest.NewCA(t)
	h := apptest.NewHost(t)
	// An EKS kubeconfig as `aws eks update-kubeconfig` writes it, with a
	// proxy and a context namespace besides.
	c := kindConfig(ca)
	c.Contexts["kind-dev"].Namespace = "dev"
	c.Clusters["kind-dev"].ProxyURL = "http://proxy.test:3128"
	c.AuthInfos["dev"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", "dev"}, APIVersion: "client.authentication.k8s.io/v1beta1",
	}}
	b, err := clientcmd.Write(*c)
	require.NoError(t, err)
	h.WriteFile("kubeconfig", b)

	_, err = FromKubeconfig(h.FS(), h.Path("kubeconfig"))
	require.EqualError(t, err, "kubeconfig contexts[kind-dev].namespace: a context's namespace is not used: the program's own settings name the namespaces it watches\n"+
		"kubeconfig clusters[kind-dev].proxy-url: proxies are not supported: the Client dials the server through the Host\n"+
		`kubeconfig users[dev].exec: exec plugins are not supported: build a Token function (docs/kubernetes.md "Connecting to cloud clusters")`)
}

func TestFromKubeconfig_reports_a_file_it_cannot_read_or_parse(t *testing.T) {
	h := apptest.NewHost(t)
	h.WriteFile("kubeconfig", []byte("\tnot: [yaml"))
	_, err := FromKubeconfig(h.FS(), h.Path("kubeconfig"))
	require.ErrorContains(t, err, "yaml")

	_, err = FromKubeconfig(h.FS(), h.Path("absent"))
	require.ErrorContains(t, err, "absent")
}

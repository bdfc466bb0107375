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

func TestFromKubeconfig_reports_what_is_missing(t *testing.T) {
	ca := apptest.NewCA(t)
	h := apptest.NewHost(t)
	good := kubeconfig(t, "https://api.test:443", ca, &clientcmdapi.AuthInfo{Token: "x"})
	noCA, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://api.test:443"}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "x"}},
		Contexts:       map[string]*clientcmdapi.Context{"c": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "c",
	})
	require.NoError(t, err)
	noUser, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://api.test:443", CertificateAuthorityData: ca.PEM()}},
		Contexts:       map[string]*clientcmdapi.Context{"c": {Cluster: "c", AuthInfo: "nobody"}},
		CurrentContext: "c",
	})
	require.NoError(t, err)
	otherContext, err := clientcmd.Write(clientcmdapi.Config{CurrentContext: "gone"})
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		file []byte
		want string
	}{
		"no CA":        {noCA, "the kubeconfig's cluster embeds no CA"},
		"no user":      {noUser, "the kubeconfig's current context names no cluster or no user"},
		"no context":   {otherContext, `the kubeconfig has no context "gone"`},
		"not YAML":     {[]byte("\tnot: [yaml"), "yaml"},
		"good control": {good, ""},
	} {
		t.Run(name, func(t *testing.T) {
			h.WriteFile("kubeconfig", tc.file)
			_, err := FromKubeconfig(h.FS(), h.Path("kubeconfig"))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err = FromKubeconfig(h.FS(), h.Path("absent"))
	require.ErrorContains(t, err, "absent")
}

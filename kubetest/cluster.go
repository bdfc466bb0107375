package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/loam-dev/loam/kube"
	"go.etcd.io/etcd/server/v3/embed"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// startTimeout bounds a start when the caller's context has no deadline.
// A start takes about two seconds; the margin is for loaded CI machines
// and race-detector builds.
const startTimeout = 2 * time.Minute

// stopTimeout bounds the Stop that Start registers with t.Cleanup and the
// cleanup after a failed start.
const stopTimeout = time.Minute

// ErrStopped is returned by a Cluster's methods once it has been stopped.
var ErrStopped = errors.New("kubetest: cluster is stopped")

// Cluster is a kube-apiserver and an etcd running inside this process, and
// optionally kube-controller-manager's garbage collector and ClusterRole
// aggregation (and its workload controllers), and a fake kubelet. It serves HTTPS on a loopback port with a certificate from
// its own CA, and authenticates with bearer tokens.
//
// Its methods are safe for concurrent use. Stop releases everything it
// holds: goroutines, ports, file descriptors and its temporary directory.
type Cluster struct {
	settings        settings
	dir             string
	creds           *credentials
	addr            string // host:port of the API server, the same across restarts
	admin           *kubernetes.Clientset
	apiextensions   *apiextensionsclient.Clientset
	adminHTTP       *http.Client // admin's HTTP client, whose idle connections Stop closes
	adminKubeconfig []byte

	unsubscribeLogs func()

	mu      sync.Mutex // serializes starts and stops and guards the fields below
	etcd    *embed.Etcd
	etcdURL string
	api     *apiServer
	cm      *controllerManager
	kubelet *fakeKubelet
	stopped bool
	stopErr error // what the first Stop returned
}

// Start starts a cluster for the test t and stops it when t and its
// subtests end (t.Cleanup). It fails t when the cluster does not start or
// does not stop cleanly.
//
// A package whose tests share one cluster uses NewShared instead: each start
// costs about two seconds and a few hundred megabytes.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	c, err := Run(t.Context(), opts...)
	if err != nil {
		t.Fatalf("kubetest: start cluster: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("kubetest: stop cluster: %v", err)
		}
	})
	return c
}

// Run starts a cluster and returns once it is ready: the API server
// answers /readyz, the default namespace exists, the CRDs of WithCRDs are
// Established, with WithFakeKubelet its Node is registered and, with
// WithControllerManager and RBAC, the aggregated ClusterRoles have their
// rules. ctx bounds the start only (two minutes at most when it
// has no deadline); the cluster then runs until Stop.
//
// Run reports every invalid option at once. If the cluster fails to start,
// Run releases what it had started and returns why.
func Run(ctx context.Context, opts ...Option) (*Cluster, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, fmt.Errorf("kubetest: create the cluster's directory: %w", err)
	}
	c := &Cluster{
		settings:        s,
		dir:             dir,
		unsubscribeLogs: logs().subscribe(s.logs, s.verbosity),
	}
	if err := c.start(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		return nil, errors.Join(fmt.Errorf("kubetest: %w", err), c.Stop(stopCtx))
	}
	return c, nil
}

// start brings up etcd, the API server, the CRDs, the fake kubelet and the
// controller manager, in that order.
func (c *Cluster) start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()

	creds, err := writeCredentials(c.dir, c.settings.users)
	if err != nil {
		return err
	}
	c.creds = creds

	c.etcd, c.etcdURL, err = startEtcd(ctx, filepath.Join(c.dir, "etcd"), c.settings.logs)
	if err != nil {
		return err
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the API server: %w", err)
	}
	c.addr = ln.Addr().String()
	if err := c.newAdminClient(); err != nil {
		_ = ln.Close()
		return err
	}
	if err := c.startAPIServerLocked(ctx, ln); err != nil {
		return err
	}

	if err := c.InstallCRDs(ctx, c.settings.crds...); err != nil {
		return err
	}

	// The Node is there before the workload controllers make Pods.
	if c.settings.kubelet != nil {
		if c.kubelet, err = c.startFakeKubelet(ctx, *c.settings.kubelet); err != nil {
			return err
		}
	}

	if c.settings.controllerManager || c.settings.workloads {
		path := filepath.Join(c.dir, "controller-manager.kubeconfig")
		data, err := c.kubeconfig(c.creds.cmUser)
		if err != nil {
			return err
		}
		//nolint:forbidigo // the controller manager reads its kubeconfig from a file in the cluster's own directory
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return fmt.Errorf("write the controller manager's kubeconfig: %w", err)
		}
		c.cm, err = startControllerManager(ctx, path, c.dir, c.settings.workloads)
		if err != nil {
			return err
		}
		// Only RBAC bootstraps the aggregated ClusterRoles; kube-apiserver
		// skips that under AlwaysAllow.
		if c.settings.authorization == RBAC {
			if err := c.waitForAggregation(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// startAPIServerLocked runs the API server on ln and waits until it is
// ready. c.mu is held.
func (c *Cluster) startAPIServerLocked(ctx context.Context, ln net.Listener) error {
	api, err := c.startAPIServer(ctx, ln)
	if err != nil {
		return err
	}
	c.api = api
	return c.waitReady(ctx, api)
}

// waitReady polls until the API server answers /readyz with 200 and the
// default namespace, which a post-start hook creates, exists.
func (c *Cluster) waitReady(ctx context.Context, api *apiServer) error {
	ready := func(ctx context.Context) bool {
		status := 0
		c.admin.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		if status != http.StatusOK {
			return false
		}
		_, err := c.admin.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err == nil
	}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for !ready(ctx) {
		select {
		case <-api.done:
			return fmt.Errorf("kube-apiserver stopped while starting: %w", api.err)
		case <-ctx.Done():
			return fmt.Errorf("wait for kube-apiserver to be ready: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
	return nil
}

// waitForAggregation waits until the clusterrole-aggregation controller has
// given the admin ClusterRole its rules: from then on the view, edit and
// admin ClusterRoles grant what they grant in a real cluster.
func (c *Cluster) waitForAggregation(ctx context.Context) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		role, err := c.admin.RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
		if err == nil && len(role.Rules) > 0 {
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return fmt.Errorf("read ClusterRole admin: %w", err)
		}
		select {
		case <-c.cm.done:
			return fmt.Errorf("kube-controller-manager stopped while starting: %w", c.cm.err)
		case <-ctx.Done():
			return fmt.Errorf("wait for ClusterRole aggregation: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// Stop stops the fake kubelet, the controller manager, the API server and
// etcd, and removes the cluster's directory. It waits for each to finish,
// or for ctx. Calling it again returns the first call's result.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.stopErr
	}
	c.stopped = true
	var errs []error
	if c.kubelet != nil {
		errs = append(errs, c.kubelet.stop(ctx))
		c.kubelet = nil
	}
	if c.cm != nil {
		errs = append(errs, c.cm.stop(ctx))
		c.cm = nil
	}
	if c.api != nil {
		errs = append(errs, c.api.stop(ctx))
		c.api = nil
	}
	if c.etcd != nil {
		c.etcd.Close()
		c.etcd = nil
	}
	if c.adminHTTP != nil {
		// Idle connections to a server that is gone would otherwise
		// keep their goroutines until the transport notices.
		c.adminHTTP.CloseIdleConnections()
	}
	c.unsubscribeLogs()
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", c.dir, err))
	}
	c.stopErr = errors.Join(errs...)
	return c.stopErr
}

// StopAPIServer stops the API server and leaves etcd and the controller
// manager running, so that clients see the server go away: their requests
// fail to connect and their watches end. StartAPIServer brings it back on
// the same address with the same data. Stopping a stopped API server does
// nothing.
func (c *Cluster) StopAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return ErrStopped
	}
	if c.api == nil {
		return nil
	}
	err := c.api.stop(ctx)
	c.api = nil
	if err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}

// StartAPIServer starts the API server again after StopAPIServer, on the
// same address, with the same certificate, tokens and etcd data, and waits
// until it is ready. Starting a running API server does nothing.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return ErrStopped
	}
	if c.api != nil {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	ln, err := listenAgain(ctx, c.addr)
	if err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	if err := c.startAPIServerLocked(ctx, ln); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}

// Restart stops the API server and starts it again: StopAPIServer, then
// StartAPIServer.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.StopAPIServer(ctx); err != nil {
		return err
	}
	return c.StartAPIServer(ctx)
}

// Connection returns how to reach the API server as AdminUser: its
// loopback host:port, TLS that trusts only the cluster's CA, and the admin's
// bearer token. Each call returns a new TLS config.
func (c *Cluster) Connection() kube.Connection {
	return c.connection(c.creds.admin.token)
}

// ConnectionFor returns the Connection of a user declared with WithUser, or
// of AdminUser. It returns an error naming the user if there is none.
func (c *Cluster) ConnectionFor(user string) (kube.Connection, error) {
	u, err := c.user(user)
	if err != nil {
		return kube.Connection{}, err
	}
	return c.connection(u.token), nil
}

func (c *Cluster) connection(token string) kube.Connection {
	host, _, _ := net.SplitHostPort(c.addr)
	return kube.Connection{
		Server: c.addr,
		TLS: &tls.Config{
			RootCAs:    c.caPool(),
			ServerName: host,
			MinVersion: tls.VersionTLS12,
		},
		Token: func(context.Context) (string, error) { return token, nil },
	}
}

func (c *Cluster) caPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.creds.caPEM)
	return pool
}

func (c *Cluster) user(name string) (user, error) {
	if name == AdminUser {
		return c.creds.admin, nil
	}
	u, ok := c.creds.users[name]
	if !ok {
		return user{}, fmt.Errorf("kubetest: user %q: not declared with WithUser", name)
	}
	return u, nil
}

// RESTConfig returns a client-go config for AdminUser. Each call returns a
// new config the caller may change. It sets no client-side rate limit: the
// cluster serves one process.
func (c *Cluster) RESTConfig() *rest.Config {
	return c.RESTConfigForToken(c.creds.admin.token)
}

// RESTConfigFor returns a client-go config for a user declared with
// WithUser, or for AdminUser. It returns an error naming the user if there
// is none.
func (c *Cluster) RESTConfigFor(user string) (*rest.Config, error) {
	u, err := c.user(user)
	if err != nil {
		return nil, err
	}
	return c.RESTConfigForToken(u.token), nil
}

// RESTConfigForToken returns a client-go config that authenticates with a
// bearer token, such as one from ServiceAccountToken.
func (c *Cluster) RESTConfigForToken(token string) *rest.Config {
	return &rest.Config{
		Host:            "https://" + c.addr,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.creds.caPEM...)},
		QPS:             -1,
	}
}

// Kubeconfig returns a kubeconfig file for AdminUser with the CA and the
// token embedded, as kind writes one: cluster, user and context named
// "kubetest", the context current. kubectl --kubeconfig reads it.
func (c *Cluster) Kubeconfig() []byte {
	return append([]byte(nil), c.adminKubeconfig...)
}

// newAdminClient makes the client kubetest itself uses: readiness checks,
// namespaces, CRDs and ServiceAccount tokens.
func (c *Cluster) newAdminClient() error {
	cfg := c.RESTConfig()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("admin HTTP client: %w", err)
	}
	admin, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	crds, err := apiextensionsclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return fmt.Errorf("admin CRD client: %w", err)
	}
	kubeconfig, err := c.kubeconfig(c.creds.admin)
	if err != nil {
		return err
	}
	c.admin, c.apiextensions, c.adminHTTP, c.adminKubeconfig = admin, crds, httpClient, kubeconfig
	return nil
}

func (c *Cluster) kubeconfig(u user) ([]byte, error) {
	const name = "kubetest"
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{name: {
			Server:                   "https://" + c.addr,
			CertificateAuthorityData: c.creds.caPEM,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{name: {Token: u.token}},
		Contexts: map[string]*clientcmdapi.Context{name: {
			Cluster:  name,
			AuthInfo: name,
		}},
		CurrentContext: name,
	}
	data, err := clientcmd.Write(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return data, nil
}

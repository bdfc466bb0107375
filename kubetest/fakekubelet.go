package kubetest

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/kubetest/kubelet"
)

// kubeletUserAgent is the user agent of the fake kubelet's requests, so
// the API server's logs and an audit tell them from a test's.
const kubeletUserAgent = "kubetest-fake-kubelet"

// fakeKubelet is the fake kubelet of WithFakeKubelet and the HTTP client
// it sends its requests with.
type fakeKubelet struct {
	kubelet *kubelet.Kubelet
	http    *http.Client
}

// startFakeKubelet starts the fake kubelet as the cluster's admin, with
// cfg; its Node reports the cluster's Kubernetes release unless cfg says
// otherwise.
func (c *Cluster) startFakeKubelet(ctx context.Context, cfg kubelet.Config) (*fakeKubelet, error) {
	restConfig := c.RESTConfig()
	restConfig.UserAgent = kubeletUserAgent
	httpClient, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		return nil, fmt.Errorf("fake kubelet's HTTP client: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(restConfig, httpClient)
	if err != nil {
		return nil, fmt.Errorf("fake kubelet's client: %w", err)
	}
	if info := effectiveVersion().Info(); cfg.Version == "" && info != nil {
		cfg.Version = info.GitVersion
	}
	k, err := kubelet.Start(ctx, client, cfg)
	if err != nil {
		httpClient.CloseIdleConnections()
		return nil, err
	}
	return &fakeKubelet{kubelet: k, http: httpClient}, nil
}

// stop stops the kubelet and closes its idle connections, whose
// goroutines would otherwise outlive the cluster until the server closes
// them.
func (k *fakeKubelet) stop(ctx context.Context) error {
	err := k.kubelet.Stop(ctx)
	k.http.CloseIdleConnections()
	return err
}

// RunsFakeKubelet reports whether c runs the fake kubelet
// (WithFakeKubelet), so that a tool that sets kubelet.FaultAnnotation,
// such as kubetest/explore's kubelet faults, can say which option is
// missing rather than wait for Pods that never change.
func (c *Cluster) RunsFakeKubelet() bool { return c.settings.kubelet != nil }

// RunsWorkloadControllers reports whether c runs the Deployment,
// ReplicaSet and StatefulSet controllers (WithWorkloadControllers): on a
// cluster without them no Deployment has Pods, or a status to judge it by.
func (c *Cluster) RunsWorkloadControllers() bool { return c.settings.workloads }

package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// With app.MetricNamesControllerRuntime, a Client's transport counts each
// request to a real API server in rest_client_requests_total, as
// controller-runtime exports client-go's: a list and a watch, each a GET
// answered 200, under the API server's host. Without it, the name is
// never recorded.
func TestRESTClientRequests_counts_a_list_and_a_watch_by_code_method_and_host(t *testing.T) {
	conn := cluster.Cluster(t).Connection()
	for _, names := range []app.MetricNames{app.MetricNamesLoam, app.MetricNamesControllerRuntime} {
		t.Run(names.String(), func(t *testing.T) {
			tel := apptest.NewTelemetry()
			tel.MetricNames = names
			c, err := kube.NewClient(&app.Setup{Host: app.Host{Network: app.OSHost().Network}, Telemetry: tel.Telemetry}, conn)
			require.NoError(t, err)
			t.Cleanup(func() {
				c.RoundTripper().(interface{ CloseConnections() }).CloseConnections()
			})
			kc, err := kubernetes.NewForConfig(c.Config())
			require.NoError(t, err)
			_, err = kc.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			w, err := kc.CoreV1().Namespaces().Watch(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			w.Stop()

			total, err := tel.Total(t.Context(), "rest_client_requests_total")
			if names == app.MetricNamesLoam {
				require.ErrorIs(t, err, apptest.ErrNotRecorded)
				return
			}
			require.NoError(t, err)
			require.Equal(t, int64(2), total, "the list and the watch")
			for key, want := range map[attribute.Key]map[string]int64{
				"code":   {"200": 2},
				"method": {"GET": 2},
				"host":   {conn.Server: 2},
			} {
				got, err := tel.TotalBy(t.Context(), "rest_client_requests_total", key)
				require.NoError(t, err)
				require.Equal(t, want, got, "by %s", key)
			}
		})
	}
}

package e2e

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/internal/freeaddr"
	"github.com/loam-dev/loam/kubetest/wait"
)

// probe returns the status code and body of a GET of path at addr, or 0
// when nothing answers.
func probe(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+path, nil)
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return 0, ""
	}
	defer func() { require.NoError(t, resp.Body.Close()) }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestProbes_answer_on_PROBE_ADDRESS_while_the_App_reconciles_and_stop_with_it(t *testing.T) {
	addr := freeaddr.Loopback(t)
	r := startWith(t, map[string]string{"PROBE_ADDRESS": addr})

	wait.For(t, patience, func() bool {
		code, _ := probe(t, addr, "/readyz")
		return code == http.StatusOK
	}, "/readyz never answered 200", r)
	code, _ := probe(t, addr, "/livez")
	require.Equal(t, http.StatusOK, code)

	// Ready while the App is serving: the controller reconciles.
	r.create(t, "probed", nil)
	wait.For(t, patience, func() bool {
		d, _ := r.get(t, "probed")
		return ready(d) != nil
	}, "the Database was never reconciled", r)

	require.Equal(t, 0, r.app.Stop())
	code, _ = probe(t, addr, "/readyz")
	require.Zero(t, code, "the probes stop with the App")
}

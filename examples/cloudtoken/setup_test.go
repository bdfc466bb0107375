package cloudtoken

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/config"
)

// setup is a Setup whose Process has env and whose Host dials loopback
// through n.
func setup(env map[string]string, n *network) *app.Setup {
	return &app.Setup{
		Host:    app.Host{Network: n},
		Process: app.Process{Environment: config.Map(env)},
	}
}

func TestFromSetup_reports_every_missing_or_malformed_variable_at_once(t *testing.T) {
	tests := []struct {
		name string
		from func(*app.Setup) error
		env  map[string]string
		want []string
	}{
		{"EKS", func(s *app.Setup) error { _, err := EKSFromSetup(t.Context(), s); return err }, nil,
			[]string{"config EKS_CLUSTER: not found", "config AWS_REGION: not found"}},
		{"GKE", func(s *app.Setup) error { _, err := GKEFromSetup(t.Context(), s); return err }, nil,
			[]string{"config GKE_ENDPOINT: not found", "config GKE_CA: not found"}},
		{"GKE's CA", func(s *app.Setup) error { _, err := GKEFromSetup(t.Context(), s); return err },
			map[string]string{"GKE_ENDPOINT": "34.118.1.2", "GKE_CA": "%%%"},
			[]string{"config GKE_CA: illegal base64 data"}},
		{"AKS", func(s *app.Setup) error { _, err := AKSFromSetup(t.Context(), s); return err }, nil,
			[]string{"config AKS_SERVER: not found", "config AKS_CA: not found"}},
		{"AKS's CA", func(s *app.Setup) error { _, err := AKSFromSetup(t.Context(), s); return err },
			map[string]string{"AKS_SERVER": "demo-dns-1a2b3c.hcp.westeurope.azmk8s.io:443", "AKS_CA": "%%%"},
			[]string{"config AKS_CA: illegal base64 data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &network{}
			err := tt.from(setup(tt.env, n))
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			require.Empty(t, n.dialed, "nothing is dialled before the settings are read")
		})
	}
}

// GKEFromSetup's token comes from the key file's token_uri through the
// Setup's Host: the test's network dials the test's token server.
func TestGKEFromSetup_fetches_its_token_through_the_Setup_s_Host(t *testing.T) {
	srv, _ := tokenServer(t)
	n := &network{}
	s := setup(map[string]string{
		"GKE_ENDPOINT": "34.118.1.2",
		"GKE_CA":       base64.StdEncoding.EncodeToString(caPEM(t)),
	}, n)
	conn, err := GKEFromSetup(t.Context(), s)
	require.NoError(t, err)
	require.Equal(t, "34.118.1.2:443", conn.Server)
	tok, err := conn.Token(t.Context())
	require.NoError(t, err)
	require.Equal(t, "ya29.from-the-key", tok)
	require.Equal(t, []string{srv.Listener.Addr().String()}, n.dialed)
}

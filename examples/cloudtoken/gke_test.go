package cloudtoken

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// source is an oauth2.TokenSource that returns tok or err.
type source struct {
	tok *oauth2.Token
	err error
}

func (s source) Token() (*oauth2.Token, error) { return s.tok, s.err }

func TestGKE_returns_the_source_s_access_token_or_its_error(t *testing.T) {
	tok, err := GKE(source{tok: &oauth2.Token{AccessToken: "ya29.a", TokenType: "Bearer"}})(t.Context())
	require.NoError(t, err)
	require.Equal(t, "ya29.a", tok)

	expired := errors.New("invalid_grant")
	tok, err = GKE(source{err: expired})(t.Context())
	require.ErrorIs(t, err, expired)
	require.ErrorContains(t, err, "GKE: the Google access token: invalid_grant")
	require.Empty(t, tok)
}

// tokenServer starts Google's token endpoint, as the test's: it answers
// a JWT's exchange with the access token ya29.from-the-key, and records
// the JWT's scope and audience. GOOGLE_APPLICATION_CREDENTIALS names a
// service account's key file whose token_uri is the server's, for the
// test. It returns the server and the count of exchanges.
func tokenServer(t *testing.T) (*httptest.Server, *exchanges) {
	t.Helper()
	ex := &exchanges{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		parts := strings.Split(r.PostForm.Get("assertion"), ".")
		if len(parts) != 3 {
			http.Error(w, "no JWT", http.StatusBadRequest)
			return
		}
		raw, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var claims struct{ Scope, Aud string }
		if err := json.Unmarshal(raw, &claims); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ex.mu.Lock()
		ex.n++
		ex.scope, ex.aud = claims.Scope, claims.Aud
		ex.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ya29.from-the-key","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(srv.Close)

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	file, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "demo",
		"private_key_id": "1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "controller@demo.iam.gserviceaccount.com",
		"client_id":      "1",
		"token_uri":      srv.URL + "/token",
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.json")
	require.NoError(t, os.WriteFile(path, file, 0o600))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	return srv, ex
}

// exchanges is what the token server saw.
type exchanges struct {
	mu         sync.Mutex
	n          int
	scope, aud string
}

// A service account's key file makes Application Default Credentials
// exchange a JWT signed with its key for an access token, at the file's
// token_uri, through the HTTP client in GKEDefault's context. The JWT asks
// for GKEScope, and the source keeps the token it got, so two calls make
// one exchange.
func TestGKEDefault_asks_Application_Default_Credentials_for_the_cloud_platform_scope(t *testing.T) {
	srv, ex := tokenServer(t)
	ctx := context.WithValue(t.Context(), oauth2.HTTPClient, srv.Client())
	token, err := GKEDefault(ctx)
	require.NoError(t, err)
	for range 2 {
		tok, err := token(t.Context())
		require.NoError(t, err)
		require.Equal(t, "ya29.from-the-key", tok)
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	require.Equal(t, 1, ex.n, "the source kept the token")
	require.Equal(t, GKEScope, ex.scope)
	require.Equal(t, srv.URL+"/token", ex.aud)
}

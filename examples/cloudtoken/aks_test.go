package cloudtoken

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/require"
)

// credential is an azcore.TokenCredential that records the scopes it is
// asked for.
type credential struct {
	tok    string
	err    error
	scopes [][]string
}

func (c *credential) GetToken(_ context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.scopes = append(c.scopes, opts.Scopes)
	return azcore.AccessToken{Token: c.tok, ExpiresOn: time.Now().Add(time.Hour)}, c.err
}

func TestAKS_asks_for_the_AKS_server_application_s_scope(t *testing.T) {
	c := &credential{tok: "eyJ0eXAi.entra"}
	tok, err := AKS(c)(t.Context())
	require.NoError(t, err)
	require.Equal(t, "eyJ0eXAi.entra", tok)
	require.Equal(t, [][]string{{"6dae42f8-4368-4678-94ff-3960e28e3630/.default"}}, c.scopes)
}

func TestAKS_fails_with_the_credential_s_error(t *testing.T) {
	failed := errors.New("DefaultAzureCredential: failed to acquire a token")
	tok, err := AKS(&credential{err: failed})(t.Context())
	require.ErrorIs(t, err, failed)
	require.ErrorContains(t, err, "AKS: the Microsoft Entra ID token for 6dae42f8-4368-4678-94ff-3960e28e3630/.default: ")
	require.Empty(t, tok)
}

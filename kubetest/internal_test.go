package kubetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNamespaceBase(t *testing.T) {
	tests := []struct {
		testName string
		want     string
	}{
		{"TestSimple", "testsimple"},
		{"TestX/sub_test/With Spaces", "testx-sub-test-with-spaces"},
		{"Test__many___separators__", "test-many-separators"},
		{"42/Test", "test"},
		{"///", "test"},
		{"Ünïcode/Test", "n-code-test"},
		{strings.Repeat("TestLong", 10), "testlongtestlongtestlongtestlongtestlongtestlongte"},
		{strings.Repeat("a", 49) + "/b", strings.Repeat("a", 49)},
	}
	for _, tt := range tests {
		t.Run(tt.testName, func(t *testing.T) {
			got := namespaceBase(tt.testName)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), 50)
			assert.Regexp(t, `^[a-z]([a-z0-9-]*[a-z0-9])?$`, got)
		})
	}
}

func TestRandomSuffix(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := randomSuffix()
		assert.Regexp(t, `^[a-z0-9]{6}$`, s)
		seen[s] = true
	}
	assert.Greater(t, len(seen), 95, "suffixes repeat")
}

func TestTokenCSV(t *testing.T) {
	c := &credentials{
		admin:  user{name: AdminUser, token: "admin-token", groups: []string{"system:masters"}},
		cmUser: user{name: controllerManagerUser, token: "cm-token", groups: []string{"system:masters"}},
	}
	got := string(c.tokenCSV([]user{
		{name: "dana", token: "dana-token", groups: []string{"a", "b"}},
		{name: "erin", token: "erin-token"},
	}))
	want := `admin-token,kubetest-admin,kubetest-admin,"system:masters"
cm-token,system:kube-controller-manager,system:kube-controller-manager,"system:masters"
dana-token,dana,dana,"a,b"
erin-token,erin,erin
`
	assert.Equal(t, want, got)
}

func TestRefreshTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, now.Add(48*time.Minute), refreshTime(now, now.Add(time.Hour)))
	assert.Equal(t, now, refreshTime(now, now))
}

func TestTokenSourceRenewsBeforeExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		issued := 0
		down := false
		src := &tokenSource{request: func(context.Context) (string, time.Time, error) {
			if down {
				return "", time.Time{}, errors.New("API server down")
			}
			issued++
			return fmt.Sprintf("token-%d", issued), time.Now().Add(time.Hour), nil
		}}
		token := func() string {
			t.Helper()
			got, err := src.Token(t.Context())
			require.NoError(t, err)
			return got
		}

		assert.Equal(t, "token-1", token(), "first call")
		time.Sleep(47 * time.Minute)
		assert.Equal(t, "token-1", token(), "before four fifths of the lifetime")
		time.Sleep(2 * time.Minute)
		assert.Equal(t, "token-2", token(), "after four fifths of the lifetime")

		down = true
		time.Sleep(49 * time.Minute)
		assert.Equal(t, "token-2", token(), "renewal failed, but the token is still valid")
		time.Sleep(12 * time.Minute)
		_, err := src.Token(t.Context())
		assert.ErrorContains(t, err, "API server down", "renewal failed and the token expired")
	})
}

package celcheck_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/adapters/celcheck"
)

func TestMatchConditions_compiles_as_the_API_server_does(t *testing.T) {
	check := celcheck.MatchConditions()
	for _, c := range []struct {
		expression, want string
	}{
		{expression: "request.userInfo.username != 'system:serviceaccount:memcached-system:operator'"},
		{expression: "has(object.metadata.labels) && 'app' in object.metadata.labels"},
		{expression: "oldObject == null || object.spec != oldObject.spec"},
		{expression: "authorizer.group('cache.example.com').resource('memcacheds').check('update').allowed()"},
		{expression: "object.metadata.name", want: "must evaluate to bool"},
		{expression: "object.metadata.name ==", want: "compilation failed"},
		{expression: "params.x == 1", want: "undeclared reference to 'params'"},
	} {
		err := check(c.expression)
		if c.want == "" {
			require.NoError(t, err, c.expression)
			continue
		}
		require.ErrorContains(t, err, c.want, c.expression)
	}
}

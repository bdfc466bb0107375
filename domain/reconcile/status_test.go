package reconcile_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/reconcile"
)

func TestStatusChanged(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cached, next  string
		changed       bool
		cachedIsEmpty bool // cached is nil, not ""
	}{
		{name: "the same bytes", cached: `{"a":1}`, next: `{"a":1}`},
		{name: "members in another order", cached: `{"a":1,"b":"x"}`, next: `{"b":"x","a":1}`},
		{name: "whitespace", cached: `{"a":[1,2]}`, next: "{ \"a\" : [ 1 , 2 ] }\n"},
		{name: "a null member is an absent one", cached: `{"a":1}`, next: `{"a":1,"b":null}`},
		{name: "a null member deep down", cached: `{"c":[{"t":"A"}]}`, next: `{"c":[{"t":"A","m":null}]}`},
		{name: "an empty status of an object with none", cachedIsEmpty: true, next: `{}`},
		{name: "an all-null status of an object with none", cachedIsEmpty: true, next: `{"a":null}`},
		{name: "a value differs", cached: `{"a":1}`, next: `{"a":2}`, changed: true},
		{name: "a member added", cached: `{"a":1}`, next: `{"a":1,"b":2}`, changed: true},
		{name: "a member removed", cached: `{"a":1,"b":2}`, next: `{"a":1}`, changed: true},
		{name: "lists compare in order", cached: `{"a":[1,2]}`, next: `{"a":[2,1]}`, changed: true},
		{name: "a null in a list holds its place", cached: `{"a":[1]}`, next: `{"a":[1,null]}`, changed: true},
		{name: "a status of an object with none", cachedIsEmpty: true, next: `{"a":1}`, changed: true},
		{name: "an emptied status", cached: `{"a":1}`, next: `{}`, changed: true},
		{name: "integers past float64's precision", cached: `{"n":9007199254740993}`, next: `{"n":9007199254740992}`, changed: true},
		{name: "a string is not a number", cached: `{"n":1}`, next: `{"n":"1"}`, changed: true},
		{name: "not JSON", cached: `{"a":1}`, next: `{"a":`, changed: true},
		{name: "two JSON values", cached: `{"a":1}`, next: `{"a":1}{"a":1}`, changed: true},
		{name: "a cached status that isn't JSON", cached: `{`, next: `{"a":1}`, changed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cached []byte
			if !tc.cachedIsEmpty {
				cached = []byte(tc.cached)
			}
			require.Equal(t, tc.changed, reconcile.StatusChanged(cached, []byte(tc.next)))
		})
	}
}

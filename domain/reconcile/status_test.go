package reconcile_test

import (
	"math/rand/v2"
	"strings"
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
		{name: "a null status of an object with none", cachedIsEmpty: true, next: `null`},
		{name: "an empty list is a status", cachedIsEmpty: true, next: `[]`, changed: true},
		{name: "members in another order deep down", cached: `{"c":[{"a":{"x":1,"y":[{"p":1,"q":2}]},"b":2}]}`, next: `{"c":[{"b":2,"a":{"y":[{"q":2,"p":1}],"x":1}}]}`},
		{name: "whitespace everywhere", cached: `{"a":{"b":[true,false,null,"s",-1.5e3]}}`, next: " \t{ \"a\" :\r\n{\"b\" : [ true ,false, null , \"s\" ,-1.5e3 ] } }\n"},
		{name: "a null member of each", cached: `{"a":1,"z":null}`, next: `{"b":null,"a":1}`},
		{name: "a nested object emptied of its nulls stays", cached: `{"a":{}}`, next: `{"a":{"b":null}}`},
		{name: "a nested empty object is not an absent one", cached: `{"b":1}`, next: `{"a":{},"b":1}`, changed: true},
		{name: "numbers compare by their text", cached: `{"n":1}`, next: `{"n":1.0}`, changed: true},
		{name: "a member's name is a prefix of another's", cached: `{"a":1,"ab":2}`, next: `{"ab":2,"a":1}`},
		{name: "names differ", cached: `{"a":1}`, next: `{"b":1}`, changed: true},
		{name: "a string with an escape the other spells out", cached: `{"m":"a<b é"}`, next: `{"m":"a\u003cb \u00e9"}`},
		{name: "a string with an escaped quote", cached: `{"m":"say \"hi\""}`, next: `{"m":"say \u0022hi\u0022"}`},
		{name: "a string whose escape makes it differ", cached: `{"m":"a\nb"}`, next: `{"m":"a\tb"}`, changed: true},
		{name: "a name with an escape the other spells out", cached: `{"a":1}`, next: `{"\u0061":1}`},
		{name: "a name given twice, the last one null", cached: `{"a":1}`, next: `{"a":1,"a":null}`, changed: true},
		{name: "a name given twice, the last one kept", cached: `{"a":2}`, next: `{"a":1,"a":2}`},
		{name: "a name given twice through an escape", cached: `{"a":1}`, next: `{"a":1,"\u0061":null}`, changed: true},
		{name: "bytes that aren't UTF-8 read as the same replacement", cached: "{\"m\":\"\xff\"}", next: "{\"m\":\"\xfe\"}"},
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

// FuzzStatusChanged holds the comparison of canonical forms to the one of
// decoded values, which it stands for.
func FuzzStatusChanged(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"a":1,"b":"x"}`, `{"b":"x","a":1}`},
		{`{"c":[{"t":"A"}]}`, `{"c":[{"t":"A","m":null}]}`},
		{``, `{"a":null}`},
		{`{"a":{"x":1,"y":[1,{"p":null}]}}`, `{"a":{"y":[1,{}],"x":1}}`},
		{`{"m":"a<b"}`, `{"m":"a\u003cb"}`},
		{`{"a":1}`, `{"a":1,"\u0061":2}`},
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`},
		{"{\"m\":\"\xff\"}", "{\"m\":\"\xfe\"}"},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, cached, next []byte) {
		require.Equal(t, reconcile.DecodedChanged(cached, next), reconcile.StatusChanged(cached, next),
			"cached %q, next %q", cached, next)
	})
}

// TestStatusChanged_agrees_with_decoding holds the comparison of canonical
// forms to the one of decoded values on random statuses, each compared
// with itself written another way (members reordered, nulls added or
// dropped, spaces) and with a random other: JSON the fuzzer rarely writes.
func TestStatusChanged_agrees_with_decoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var changed, unchanged int
	for range 20000 {
		v := randomJSON(r, 3)
		a, b := v.write(r, false), v.write(r, true)
		if r.IntN(4) == 0 {
			b = randomJSON(r, 3).write(r, true)
		}
		want := reconcile.DecodedChanged([]byte(a), []byte(b))
		require.Equal(t, want, reconcile.StatusChanged([]byte(a), []byte(b)), "cached %s, next %s", a, b)
		if want {
			changed++
		} else {
			unchanged++
		}
	}
	require.Greater(t, unchanged, 5000, "the pairs must test sameness too")
	require.Greater(t, changed, 2000)
}

// jsonValue is a random JSON value: a leaf's text, or an object's or a
// list's items.
type jsonValue struct {
	leaf    string
	object  bool
	list    bool
	names   []string
	members []jsonValue
}

func randomJSON(r *rand.Rand, depth int) jsonValue {
	leaves := []string{`1`, `1.0`, `-0`, `2e3`, `"x"`, `"\u0078"`, `"é"`, `"\u00e9"`, `"a\"b"`, `true`, `false`, `null`}
	names := []string{`a`, `b`, `ab`, `\u0061`, `é`, `type`}
	switch n := r.IntN(10); {
	case depth == 0 || n < 4:
		return jsonValue{leaf: leaves[r.IntN(len(leaves))]}
	case n < 7:
		v := jsonValue{object: true}
		for range r.IntN(4) {
			v.names = append(v.names, names[r.IntN(len(names))])
			v.members = append(v.members, randomJSON(r, depth-1))
		}
		return v
	default:
		v := jsonValue{list: true}
		for range r.IntN(3) {
			v.members = append(v.members, randomJSON(r, depth-1))
		}
		return v
	}
}

// write writes v; other writes it another way, as the same value.
func (v jsonValue) write(r *rand.Rand, other bool) string {
	space := func() string {
		if other && r.IntN(3) == 0 {
			return []string{" ", "\n", "\t ", "\r\n"}[r.IntN(4)]
		}
		return ""
	}
	var b strings.Builder
	b.WriteString(space())
	switch {
	case v.object:
		order := make([]int, len(v.members))
		for i := range order {
			order[i] = i
		}
		hasDup := false
		for i, n := range v.names {
			for _, m := range v.names[:i] {
				hasDup = hasDup || n == m || (n == "a" && m == "\\u0061") || (n == "\\u0061" && m == "a")
			}
		}
		if other && !hasDup { // with a name twice, the order decides
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		b.WriteString("{")
		first := true
		member := func(name, value string) {
			if !first {
				b.WriteString(",")
			}
			first = false
			b.WriteString(space() + `"` + name + `"` + space() + ":" + value)
		}
		for _, i := range order {
			if other && !hasDup && v.members[i].leaf == "null" && r.IntN(2) == 0 {
				continue // a null member dropped
			}
			member(v.names[i], v.members[i].write(r, other))
		}
		if other && !hasDup && r.IntN(3) == 0 {
			member("added", "null")
		}
		b.WriteString(space() + "}")
	case v.list:
		b.WriteString("[")
		for i, m := range v.members {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(m.write(r, other))
		}
		b.WriteString(space() + "]")
	default:
		b.WriteString(v.leaf)
	}
	b.WriteString(space())
	return b.String()
}

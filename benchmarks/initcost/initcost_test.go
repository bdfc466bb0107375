package initcost_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/benchmarks/initcost"
)

func TestParseInitTrace(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []initcost.Package
		err      string
	}{
		{
			name: "init lines among others",
			in: "init runtime @0.030 ms, 0.19 ms clock, 0 bytes, 0 allocs\n" +
				"something else on stderr\n" +
				"init k8s.io/api/core/v1 @10 ms, 0.076 ms clock, 67272 bytes, 405 allocs\n",
			want: []initcost.Package{
				{Path: "runtime", Clock: 190 * time.Microsecond},
				{Path: "k8s.io/api/core/v1", Clock: 76 * time.Microsecond, Bytes: 67272, Allocs: 405},
			},
		},
		{name: "none", in: "hello\n"},
		{name: "a field short", in: "init os @0 ms, 0 ms clock, 416 bytes\n", err: "not init PATH"},
		{name: "bytes not a number", in: "init os @0 ms, 0 ms clock, many bytes, 9 allocs\n", err: "bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := initcost.ParseInitTrace(strings.NewReader(c.in))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestParseStatus(t *testing.T) {
	m, err := initcost.ParseStatus([]byte("Name:\tkube\nVmHWM:\t   28000 kB\nVmRSS:\t   27716 kB\nRssAnon:\t    5764 kB\nRssFile:\t   21952 kB\n"))
	require.NoError(t, err)
	require.Equal(t, initcost.Memory{RSS: 27716 << 10, Anon: 5764 << 10, File: 21952 << 10}, m)

	_, err = initcost.ParseStatus([]byte("Name:\tkube\n"))
	require.ErrorContains(t, err, "no VmRSS")
	_, err = initcost.ParseStatus([]byte("VmRSS:\t lots kB\n"))
	require.ErrorContains(t, err, "VmRSS")
}

func TestTrace_sums_and_ranks(t *testing.T) {
	tr := initcost.Trace{Packages: []initcost.Package{
		{Path: "a", Clock: time.Millisecond, Bytes: 10, Allocs: 1},
		{Path: "a/b", Clock: 2 * time.Millisecond, Bytes: 30, Allocs: 2},
		{Path: "ab", Bytes: 20, Allocs: 3},
	}}
	require.Equal(t, int64(60), tr.Bytes())
	require.Equal(t, int64(6), tr.Allocs())
	require.Equal(t, 3*time.Millisecond, tr.Clock())
	require.Equal(t, []string{"a/b", "ab"}, paths(tr.Top(2)))
	require.Equal(t, []string{"a", "a/b"}, paths(tr.Under("a")), "ab is not below a")
	require.Len(t, tr.Top(10), 3)
}

func paths(ps []initcost.Package) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Path
	}
	return out
}

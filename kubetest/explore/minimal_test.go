package explore

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

func TestMinimal(t *testing.T) {
	create := func(name string) Step {
		return Step{Step: generate.Step{Op: generate.Create, Name: name, Spec: map[string]any{"size": int64(1)}}}
	}
	a, b, c := create("a"), create("b"), create("c")
	b.CrashAfter, b.StaleFrom = 1, 2
	for _, tc := range []struct {
		name  string
		steps []Step
		// want is the minimal sequence: a sequence fails when it creates
		// b crashing after write 1.
		want []Step
		// replays is how many replays the shrinking takes.
		replays int
	}{
		// Its crash dropped, it passes.
		{"a minimal sequence is replayed no more", []Step{{Step: b.Step, CrashAfter: 1}}, []Step{{Step: b.Step, CrashAfter: 1}}, 1},
		{"one fault to drop", []Step{b}, []Step{{Step: b.Step, CrashAfter: 1}}, 2},
		{"steps and a fault to drop", []Step{a, b, c}, []Step{{Step: b.Step, CrashAfter: 1}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replayed := map[string]int{}
			replay := func(s []Step, refused []string) error {
				key := strings.Join(stepLines(s), "; ")
				replayed[key]++
				for i, step := range s {
					refused[i] = "refused " + step.Name
				}
				for _, step := range s {
					if step.Name == "b" && step.CrashAfter == 1 {
						return errors.New("fails: " + key)
					}
				}
				return nil
			}
			whole := answer{refused: make([]string, len(tc.steps))}
			whole.err = replay(tc.steps, whole.refused)
			require.Error(t, whole.err)
			clear(replayed)

			got, last := minimal(tc.steps, whole, replay)
			require.Equal(t, tc.want, got)
			key := strings.Join(stepLines(got), "; ")
			require.EqualError(t, last.err, "fails: "+key, "what the minimal sequence's replay found")
			require.Equal(t, []string{"refused b"}, last.refused, "why the API server refused each of its steps, in that replay")
			for seq, n := range replayed {
				require.Equal(t, 1, n, "%s: replayed %d times", seq, n)
			}
			require.NotContains(t, replayed, strings.Join(stepLines(tc.steps), "; "), "the whole sequence's replay is known")
			if tc.replays >= 0 {
				require.Len(t, replayed, tc.replays)
			}
		})
	}
}

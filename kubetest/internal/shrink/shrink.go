// Package shrink finds a smallest failing sequence within a failing one:
// Zeller's delta debugging (ddmin), for kubetest's explorer, whose
// failures are sequences of steps that a replay either fails or passes
// (issue #25).
package shrink

// Minimize returns a subsequence of steps, in their order, for which
// fails still holds and from which no single step can be removed with
// fails still holding (1-minimal; it never tries the empty sequence, so
// it keeps at least one step), asking fails at most about n² times
// for n steps and far fewer for a short cause. steps must fail; when
// they don't, Minimize returns them unchanged. fails must be
// deterministic: the explorer replays each candidate from the same seed.
func Minimize[T any](steps []T, fails func([]T) bool) []T {
	if len(steps) == 0 || !fails(steps) {
		return steps
	}
	current := steps
	parts := 2
	for len(current) >= 2 {
		chunks := split(current, parts)
		reduced := false
		// A chunk alone that fails: continue from it.
		for _, c := range chunks {
			if len(c) < len(current) && fails(c) {
				current, parts, reduced = c, 2, true
				break
			}
		}
		if !reduced && parts > 2 {
			// A complement that fails: continue from it, with one part
			// fewer.
			for i := range chunks {
				rest := without(chunks, i)
				if fails(rest) {
					current, parts, reduced = rest, max(parts-1, 2), true
					break
				}
			}
		}
		if reduced {
			continue
		}
		if parts >= len(current) {
			break
		}
		parts = min(2*parts, len(current))
	}
	return current
}

// split cuts s into n contiguous chunks whose lengths differ by at most
// one.
func split[T any](s []T, n int) [][]T {
	chunks := make([][]T, 0, n)
	start := 0
	for i := range n {
		end := start + (len(s)-start)/(n-i)
		chunks = append(chunks, s[start:end:end])
		start = end
	}
	return chunks
}

// without joins every chunk but the i-th into a new slice.
func without[T any](chunks [][]T, i int) []T {
	var out []T
	for j, c := range chunks {
		if j != i {
			out = append(out, c...)
		}
	}
	return out
}

package scale

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScale runs the phases -scale.only names for each -scale.n and
// -scale.w on one cluster, and prints the report. Each phase checks what
// it must (every object converged, every reconcile counted, the standby
// took over), never how fast.
func TestScale(t *testing.T) {
	cfg, err := parseConfig(*flagN, *flagW, *flagOnly, *flagLimits, *flagLoad, *flagLease, *flagLoaders, *flagRepeat, *flagOut)
	require.NoError(t, err)
	rep := &report{cfg: cfg, started: time.Now(), loadStart: loadAverage()}
	c := startCluster(t)
	t.Cleanup(func() {
		md := rep.markdown()
		t.Log("\n" + md)
		if cfg.out != "" {
			if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
				t.Errorf("write the report: %v", err)
			}
		}
	})

	for _, n := range cfg.ns {
		// Each limit and convergence of the same N and W run one after the
		// other, so that they meet the same load of the machine.
		for r := range cfg.repeat {
			for _, w := range cfg.ws {
				if cfg.phases[phaseLimit] {
					for _, via := range cfg.limits {
						t.Run(fmt.Sprintf("limit/n=%d/w=%d/%s/run=%d", n, w, via, r), func(t *testing.T) {
							rep.limits = append(rep.limits, measureLimit(t, c, cfg, n, w, via))
						})
					}
				}
				if cfg.phases[phaseConvergence] {
					t.Run(fmt.Sprintf("convergence/n=%d/w=%d/run=%d", n, w, r), func(t *testing.T) {
						rep.convergences = append(rep.convergences, measureConvergence(t, c, cfg, n, w))
					})
				}
			}
		}
		if cfg.phases[phasePriority] {
			t.Run(fmt.Sprintf("priority/n=%d", n), func(t *testing.T) {
				// One set of ConfigMaps: each run lists it anew.
				ns := priorityObjects(t, c, cfg, n)
				for r := range cfg.repeat {
					for _, v := range rotated(priorityVariants, r) {
						t.Run(fmt.Sprintf("%s/run=%d", v, r), func(t *testing.T) {
							rep.priorities = append(rep.priorities, measurePriority(t, c, ns, n, r, v))
						})
					}
				}
			})
		}
		if !cfg.phases[phaseStartup] && !cfg.phases[phaseMemory] && !cfg.phases[phaseFailover] {
			continue
		}
		t.Run(fmt.Sprintf("existing/n=%d", n), func(t *testing.T) {
			ns := populate(t, c, cfg, n)
			if cfg.phases[phaseStartup] || cfg.phases[phaseMemory] {
				t.Run("startup", func(t *testing.T) {
					rep.startups = append(rep.startups, measureStartup(t, c, n, ns))
				})
			}
			if cfg.phases[phaseFailover] {
				t.Run("failover", func(t *testing.T) {
					rep.failovers = append(rep.failovers, measureFailover(t, c, cfg, n, ns)...)
				})
			}
		})
	}
}

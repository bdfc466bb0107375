package compare

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/loam-dev/loam/benchmarks/internal/apimetrics"
	"github.com/loam-dev/loam/benchmarks/internal/probe"
)

// Results are the runs of one comparison.
type Results struct {
	Config Config
	// Runs are in the order they ran.
	Runs []Result
}

// figure is one row of the table: a figure of each run, and the goal for
// loam's median against each controller-runtime mode's, if there is one.
type figure struct {
	name string
	// goalName names the figure in the goals' lines.
	goalName string
	// controller figures are the controller process's own: the limit has
	// none.
	controller bool
	// digits after the decimal point.
	digits int
	value  func(r Result, n int) float64
	// goal is the most loam/CR may be; 0 for none.
	goal float64
}

// against are the modes loam's ratios are of, in the table's order.
var against = []Mode{ControllerRuntime, ControllerRuntimeTuned}

// ratioName is the heading of loam's ratio to m.
func ratioName(m Mode) string {
	if m == ControllerRuntimeTuned {
		return "loam/CR-tuned"
	}
	return "loam/CR"
}

// figures are the table's rows.
var figures = []figure{
	{name: "convergence (s)", goalName: "convergence", digits: 2, goal: 0.95,
		value: func(r Result, _ int) float64 { return r.Convergence.Seconds() }},
	{name: "controller CPU (s)", goalName: "controller CPU", controller: true, digits: 2, goal: 0.5,
		value: func(r Result, _ int) float64 { return r.ControllerCPU.Seconds() }},
	{name: "heap per object (B)", goalName: "heap per object", controller: true, digits: 0, goal: 0.5,
		value: func(r Result, n int) float64 { return r.HeapPerObject(n) }},
	{name: "peak RSS (MiB)", goalName: "peak RSS", controller: true, digits: 1, goal: 0.6,
		value: func(r Result, _ int) float64 { return float64(r.PeakRSS) / (1 << 20) }},
	{name: "peak RSS before the first object (MiB)", controller: true, digits: 1,
		value: func(r Result, _ int) float64 { return float64(r.StartRSS) / (1 << 20) }},
	{name: "heap before the first object (MiB)", controller: true, digits: 1,
		value: func(r Result, _ int) float64 { return float64(r.Started.HeapBytes) / (1 << 20) }},
	{name: "reconciles/object", controller: true, digits: 2,
		value: func(r Result, n int) float64 { return float64(r.Converged.Reconciles) / float64(n) }},
	{name: "writes/object", digits: 2,
		value: func(r Result, n int) float64 { return r.Writes() / float64(n) }},
	{name: "409s", digits: 0,
		value: func(r Result, _ int) float64 { return r.Conflicts() }},
	{name: "Lease writes", controller: true, digits: 0,
		value: func(r Result, _ int) float64 { return r.LeaseWrites() }},
	{name: "API server CPU (s)", digits: 2,
		value: func(r Result, _ int) float64 { return r.HarnessCPU.Seconds() }},
}

// goalOrder is the order the goals are listed in.
var goalOrder = []string{"controller CPU (s)", "heap per object (B)", "peak RSS (MiB)", "convergence (s)"}

// Markdown writes the comparison as Markdown: the table of medians, the
// goals, how it was run, every run, and the requests per object.
func (res *Results) Markdown(w io.Writer, command string) error {
	cfg := res.Config
	var b strings.Builder
	fmt.Fprintf(&b, "N = %d objects, W = %d, %d %s; creators: %d. Each cell is the median of the runs, with their min–max.\n\n",
		cfg.N, cfg.Workers, cfg.Repeats, plural(cfg.Repeats, "repeat", "repeats"), cfg.Creators)

	b.WriteString("| figure")
	for _, m := range Modes {
		fmt.Fprintf(&b, " | %s", m)
	}
	for _, m := range against {
		fmt.Fprintf(&b, " | %s", ratioName(m))
	}
	b.WriteString(" |\n| ---" + strings.Repeat(" | ---:", len(Modes)+len(against)) + " |\n")
	for _, f := range figures {
		fmt.Fprintf(&b, "| %s", f.name)
		for _, m := range Modes {
			fmt.Fprintf(&b, " | %s", res.cell(f, m))
		}
		for _, m := range against {
			if ratio, ok := res.ratio(f, m); ok {
				fmt.Fprintf(&b, " | %.2f", ratio)
			} else {
				b.WriteString(" | —")
			}
		}
		b.WriteString(" |\n")
	}

	b.WriteString("\nGoals, loam's median against each controller-runtime mode's:\n\n")
	b.WriteString(res.goals())

	fmt.Fprintf(&b, "\nCommand: `%s`\n\n", command)
	b.WriteString(res.environment())
	b.WriteString(`
Convergence is from the first create until the harness's own watch has seen every object's status settled: Ready, observing its generation. Controller CPU (user and system, from /proc/<pid>/stat, so Linux only) is the controller process's in that window, and peak RSS its VmHWM at its end; the peak RSS and the heap before the first object are the same once its clients and controller were built and it had reported in. Heap per object is the controller's heap after two garbage collections (HeapAlloc) once every object had settled, less the same before its controller started, over N. Writes, 409s and Lease writes are the API server's own count (apiserver_request_total) of the run's requests: writes are applies, patches, updates and creates of the ConfigMaps and of the Memcacheds' status, not the harness's creates; Lease writes are the leader's renewals, with the API server's own identity Lease's (one every 10 s). API server CPU is the harness's process in the window: kube-apiserver and etcd, with the harness's creators and its watch, and in the limit its applies. Both controllers record their metrics and serve them on /metrics, as in production; controller-runtime-tuned is controller-runtime with metadata-only Owns, managedFields stripped from its cache and no gzip.
`)

	b.WriteString("\n### Every run\n\n")
	b.WriteString("| repeat | mode | convergence (s) | controller CPU (s) | heap per object (B) | peak RSS (MiB) | reconciles/object | writes/object | 409s | Lease writes | API server CPU (s) | left after cleanup | apiserver_storage_objects | reconciles in /metrics |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "| %d | %s", r.Repeat, r.Mode)
		for _, f := range figures {
			if f.controller && !r.Mode.controller() {
				b.WriteString(" | —")
				continue
			}
			fmt.Fprintf(&b, " | %s", format(f.value(r, cfg.N), f.digits))
		}
		stored := "—" // the API server hasn't counted yet
		if r.StoredObjects > 0 {
			stored = format(r.StoredObjects, 0)
		}
		scraped := "—" // the limit runs no controller
		if r.Mode.controller() {
			scraped = format(r.ScrapedReconciles, 0)
		}
		fmt.Fprintf(&b, " | %d | %s | %s |\n", r.Left, stored, scraped)
	}
	b.WriteString("\nLeft after cleanup: the Memcacheds, ConfigMaps and Leases of the whole cluster once the run had deleted its own. apiserver_storage_objects is every stored object as the API server last counted them; it counts once a minute, so it lags, and is — until it first has. Reconciles in /metrics are what the controller's own metrics counted, scraped once every object had settled: loam_kube_controller_reconcile_duration_seconds' count for loam, controller_runtime_reconcile_total for controller-runtime.\n")

	b.WriteString(res.restartTable())

	b.WriteString("\n### Requests per object\n\nThe API server's count of each kind of request over all runs of a mode, over N × runs; it includes the harness's creates (POST memcacheds) and its watch.\n\n")
	b.WriteString(res.requestsTable())

	_, err := io.WriteString(w, b.String())
	return err
}

// goals are the goals' lines: each goal, met or missed against each
// controller-runtime mode, or not measured where either didn't run.
func (res *Results) goals() string {
	var b strings.Builder
	for _, name := range goalOrder {
		f := figureNamed(name)
		var parts []string
		for _, m := range against {
			ratio, ok := res.ratio(f, m)
			switch {
			case !ok:
				parts = append(parts, fmt.Sprintf("not measured against %s", m))
			case ratio <= f.goal:
				parts = append(parts, fmt.Sprintf("%.2f× %s, met", ratio, m))
			default:
				parts = append(parts, fmt.Sprintf("%.2f× %s, missed", ratio, m))
			}
		}
		fmt.Fprintf(&b, "- %s ≤ %.2g×: %s\n", f.goalName, f.goal, strings.Join(parts, "; "))
	}
	return b.String()
}

// cell is f of mode's runs: their median and range, or — where mode has
// no such figure or didn't run.
func (res *Results) cell(f figure, m Mode) string {
	if f.controller && !m.controller() {
		return "—"
	}
	vs := res.values(f, m)
	if len(vs) == 0 {
		return "—"
	}
	med := median(vs)
	if len(vs) == 1 {
		return format(med, f.digits)
	}
	return fmt.Sprintf("%s (%s–%s)", format(med, f.digits), format(slices.Min(vs), f.digits), format(slices.Max(vs), f.digits))
}

// ratio is loam's median of f over mode m's.
func (res *Results) ratio(f figure, m Mode) (float64, bool) {
	l, c := res.values(f, Loam), res.values(f, m)
	if len(l) == 0 || len(c) == 0 || median(c) == 0 {
		return 0, false
	}
	return median(l) / median(c), true
}

// values are f of each of mode's runs.
func (res *Results) values(f figure, m Mode) []float64 {
	var vs []float64
	for _, r := range res.Runs {
		if r.Mode == m {
			vs = append(vs, f.value(r, res.Config.N))
		}
	}
	return vs
}

// environment describes the controllers' Go environment, as they
// reported it.
func (res *Results) environment() string {
	seen := map[Mode]probe.Started{}
	for _, r := range res.Runs {
		if r.Mode.controller() {
			seen[r.Mode] = r.Started
		}
	}
	stripped := strings.Join(StrippedVariables, ", ")
	godebug := "unset"
	for _, kv := range res.Config.Environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			godebug = fmt.Sprintf("%q", v)
		}
	}
	if len(seen) == 0 {
		return fmt.Sprintf("No controller ran. %s would be removed from their environment; GODEBUG is %s.\n", stripped, godebug)
	}
	var lines []string
	for _, m := range slices.Sorted(maps.Keys(seen)) {
		s := seen[m]
		limit := "no memory limit"
		if s.MemoryLimit != math.MaxInt64 {
			limit = fmt.Sprintf("memory limit %d B", s.MemoryLimit)
		}
		lines = append(lines, fmt.Sprintf("%s %s/%s, GOMAXPROCS %d, GOGC %d, %s", s.GoVersion, s.OS, s.Arch, s.GOMAXPROCS, s.GOGC, limit))
	}
	lines = slices.Compact(lines)
	env := "Go environment of both controllers: " + lines[0]
	if len(lines) > 1 {
		env = "Go environments of the controllers differ: " + strings.Join(lines, "; ")
	}
	return fmt.Sprintf("%s. %s are removed from their environment, so the runtime's defaults apply; GODEBUG is %s. Each runs in a process of its own, built by the harness with the same toolchain.\n", env, stripped, godebug)
}

// requestsTable is the requests per object of each mode, by kind.
func (res *Results) requestsTable() string {
	sums := map[Mode]apimetrics.Requests{}
	runs := map[Mode]int{}
	for _, r := range res.Runs {
		if sums[r.Mode] == nil {
			sums[r.Mode] = apimetrics.Requests{}
		}
		for k, v := range r.Requests {
			sums[r.Mode][k] += v
		}
		runs[r.Mode]++
	}
	all := apimetrics.Requests{}
	for _, s := range sums {
		for k, v := range s {
			all[k] += v
		}
	}
	var b strings.Builder
	b.WriteString("| request")
	for _, m := range Modes {
		fmt.Fprintf(&b, " | %s", m)
	}
	b.WriteString(" |\n| ---" + strings.Repeat(" | ---:", len(Modes)) + " |\n")
	everything := func(apimetrics.Request) bool { return true }
	for _, kind := range all.ByKind(everything) {
		fmt.Fprintf(&b, "| %s", kind.Kind)
		for _, m := range Modes {
			if runs[m] == 0 {
				b.WriteString(" | —")
				continue
			}
			n := sums[m].Sum(func(k apimetrics.Request) bool { return k.String() == kind.Kind })
			fmt.Fprintf(&b, " | %s", format(n/float64(runs[m]*res.Config.N), 3))
		}
		b.WriteString(" |\n")
	}
	return b.String()
}

func figureNamed(name string) figure {
	for _, f := range figures {
		if f.name == name {
			return f
		}
	}
	panic("compare: no figure " + name)
}

// median of vs, which is not empty; the mean of the middle two for an
// even count.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// format prints v with digits after the point, and thousands separated
// by commas when it has none.
func format(v float64, digits int) string {
	if digits > 0 {
		return fmt.Sprintf("%.*f", digits, v)
	}
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

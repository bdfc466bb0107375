package scale

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// report gathers every phase's results and prints them as Markdown.
type report struct {
	cfg          config
	started      time.Time
	loadStart    string
	limits       []limitResult
	convergences []convergenceResult
	startups     []startupResult
	failovers    []failoverResult
	priorities   []priorityResult
}

// markdown renders the report.
func (r *report) markdown() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "## Scale harness\n\n")
	fmt.Fprintf(&b, "Machine: %s, %d CPUs (GOMAXPROCS %d), %s, %s/%s. Load average at the start: %s; at the end: %s. Wall time: %v.\n\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		r.loadStart, loadAverage(), time.Since(r.started).Round(time.Second))
	fmt.Fprintf(&b, "Flags: -scale.n=%s -scale.w=%s -scale.load=%s -scale.lease=%s -scale.loaders=%d -scale.repeat=%d ",
		ints(r.cfg.ns), ints(r.cfg.ws), r.cfg.load, r.cfg.lease.name, r.cfg.loaders, r.cfg.repeat)
	fmt.Fprintf(&b, "-scale.limits=%s\n\n", strings.Join(r.cfg.limits, ","))

	if len(r.limits) > 0 || len(r.convergences) > 0 {
		b.WriteString("### The limit and convergence\n\n")
		b.WriteString("The limit: N ConfigMap applies and N status applies by W workers of plain client-go, until the harness's watch saw every status. ")
		b.WriteString("Convergence: the Controller with Workers = W, from the App's start (objects created before it) or the loader's start (created while it runs), until the same watch saw every status settled. ")
		b.WriteString("The ratio is convergence over the limit; with the objects created while the Controller runs (-scale.load=while), over the limit plus the time the loader took to create the limit's objects beforehand. ")
		b.WriteString("With several runs: the median, (least–most), and the ratio of each run to the limit run just before it.\n\n")
		b.WriteString("| N | W | N creates (untimed in the limit) | limit | writes/s | convergence | ratio | of which start-up | ratio after sync | reconciles/object | reconciles begun when settled | failed reconciles |\n")
		b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n")
		for _, row := range r.limitRows() {
			b.WriteString(row)
		}
		b.WriteString("\nWhat the controller did, against what the limit did. The limit again through loam's Client (its transport: otelhttp, the token), and again while two informers watch the objects and the ConfigMaps' metadata as the Controller's do (the cost of watching, which the limit leaves out); ")
		b.WriteString("requests per object by the API server's own count (apiserver_request_total); ")
		b.WriteString("CPU time of this whole process (API server, etcd, controller and harness) per object, and the CPU the machine's other processes took meanwhile; ")
		b.WriteString("the queue's and the reconciles' times from the controller's own histograms, p99 as a bucket's upper bound; ")
		b.WriteString("workers busy is the reconciles' time over W × (last reconcile − sync).\n\n")
		b.WriteString("| N | W | run | limit via loam's Client | limit watched as the Controller watches | requests/object, limit | requests/object, convergence | CPU/object: limit / watched limit / convergence | other processes' CPU, limit / convergence (cores) | queue adds/object | queue wait mean (p99) | reconcile mean (p99) | of which the ConfigMap apply | workers busy |\n")
		b.WriteString("| ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, row := range r.diagnosisRows() {
			b.WriteString(row)
		}
		b.WriteString("\n")
	}
	if len(r.startups) > 0 {
		b.WriteString("### Start-up and memory (the controller in a child process, Workers = 4)\n\n")
		b.WriteString("Times from Serve. RSS before Serve includes what the test binary's own packages (it links the API server) hold at start; the peak is VmHWM, reset before Serve, read once synced. Heap is HeapAlloc after two GCs, before Serve and once synced; per object it is the difference over N. On the wire: a list's item as JSON.\n\n")
		b.WriteString("| N | Serve → synced | Serve → first reconcile | RSS before Serve | peak RSS to sync | peak − before | heap/primary + owned | heap/primary (no Owns) | heap/owned | wire JSON/primary | without managedFields | wire JSON/owned metadata |\n")
		b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, s := range r.startups {
			w, a := s.withOwns, s.noOwns
			perBoth := perObject(w.HeapSynced, w.HeapBefore, s.n)
			perPrimary := perObject(a.HeapSynced, a.HeapBefore, s.n)
			peak := mib(w.PeakSynced)
			if !w.PeakReset {
				peak += " (since start)"
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %.0f B | %.0f B | %.0f B | %.0f B | %.0f B | %.0f B |\n",
				s.n, ms(w.Synced), ms(w.FirstReconcile), mib(w.RSSBefore), peak, mib(w.PeakSynced-w.RSSBefore),
				perBoth, perPrimary, perBoth-perPrimary, s.wireObject, s.wireObjectStripped, s.wireMetadata)
		}
		b.WriteString("\n")
	}
	if len(r.failovers) > 0 {
		b.WriteString("### Failover (two replicas, Workers = 4, warm caches)\n\n")
		b.WriteString("From the leader's end (its network cut, or SIGTERM sent) to the standby's first reconcile; from the standby's own record of taking the Lease (client-go's \"Successfully acquired lease\", in the App's telemetry) to that reconcile; the same from the moment the harness's watch of the Lease saw the standby hold it, which lags the API server's write, so it may be negative; and from taking the Lease until the standby had reconciled every object.\n\n")
		b.WriteString("| N | how the leader went | Lease (duration, renew, retry) | → standby's first reconcile | Lease acquired (record) → first reconcile | Lease seen by the harness's watch → first reconcile | acquired → every object reconciled |\n")
		b.WriteString("| ---: | --- | --- | ---: | ---: | ---: | ---: |\n")
		for _, f := range r.failovers {
			fmt.Fprintf(&b, "| %d | %s | %v, %v, %v | %s | %s | %s | %s |\n", f.n, f.how, f.lease.duration, f.lease.renew, f.lease.period,
				ms(f.toFirst), ms(f.acquiredToFirst), ms(f.watchedToFirst), ms(f.acquiredToAll))
		}
		b.WriteString("\n")
	}
	b.WriteString(r.priorityMarkdown())
	return b.String()
}

// pair is the runs of one N and W: the limits by plain client-go and
// through loam's Client, and the convergences, in the order they ran.
type pair struct {
	n, w        int
	limits      []limitResult
	loamLimits  []limitResult
	watched     []limitResult
	convergence []convergenceResult
}

// pairs groups the limits and convergences by N and W, in the order they
// first ran.
func (r *report) pairs() []*pair {
	var out []*pair
	find := func(n, w int) *pair {
		for _, p := range out {
			if p.n == n && p.w == w {
				return p
			}
		}
		p := &pair{n: n, w: w}
		out = append(out, p)
		return p
	}
	for _, l := range r.limits {
		p := find(l.n, l.w)
		switch l.via {
		case viaLoam:
			p.loamLimits = append(p.loamLimits, l)
		case viaWatched:
			p.watched = append(p.watched, l)
		default:
			p.limits = append(p.limits, l)
		}
	}
	for _, c := range r.convergences {
		p := find(c.n, c.w)
		p.convergence = append(p.convergence, c)
	}
	return out
}

func (r *report) limitRows() []string {
	var rows []string
	for _, p := range r.pairs() {
		limits := durations(p.limits, func(l limitResult) time.Duration { return l.seen })
		creates := durations(p.limits, func(l limitResult) time.Duration { return l.creating })
		convs := durations(p.convergence, func(c convergenceResult) time.Duration { return c.settled })
		synced := durations(p.convergence, func(c convergenceResult) time.Duration { return c.synced })
		after := durations(p.convergence, func(c convergenceResult) time.Duration { return c.settled - c.synced })
		creating, limit, writes, conv, ratio, startup, ratioSynced := "–", "–", "–", "–", "–", "–", "–"
		while := len(p.convergence) > 0 && p.convergence[0].load == loadWhile
		// The yardstick: the limit, and with the objects created while
		// the Controller runs, the creates' time too.
		yardstick := limits
		if len(limits) > 0 {
			creating = secs(median(creates))
			limit = spread(limits)
			writes = fmt.Sprintf("%.0f", float64(2*p.n)/median(limits).Seconds())
			if while {
				yardstick = make([]time.Duration, len(limits))
				for i := range limits {
					yardstick[i] = limits[i] + creates[i]
				}
			}
		}
		if len(convs) > 0 {
			conv = spread(convs)
			startup = secs(median(synced))
			if while {
				startup = "loading " + secs(median(durations(p.convergence, func(c convergenceResult) time.Duration { return c.loading })))
			}
		}
		if len(limits) > 0 && len(convs) > 0 {
			ratio = fmt.Sprintf("%.2f", median(convs).Seconds()/median(yardstick).Seconds())
			if k := min(len(limits), len(convs)); k > 1 {
				each := make([]string, k)
				for i := range k {
					each[i] = fmt.Sprintf("%.2f", convs[i].Seconds()/yardstick[i].Seconds())
				}
				ratio += " (" + strings.Join(each, ", ") + ")"
			}
			ratioSynced = fmt.Sprintf("%.2f", median(after).Seconds()/median(yardstick).Seconds())
		}
		reconciles, failures, settledAt := "–", "–", "–"
		if len(p.convergence) > 0 {
			reconciles = perObjectHistogram(p.convergence)
			f := 0
			at := make([]time.Duration, len(p.convergence))
			for i, c := range p.convergence {
				f += c.failures
				at[i] = time.Duration(c.atSettled)
			}
			failures = fmt.Sprint(f)
			settledAt = fmt.Sprint(int(median(at)))
		}
		rows = append(rows, fmt.Sprintf("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			p.n, p.w, creating, limit, writes, conv, ratio, startup, ratioSynced, reconciles, settledAt, failures))
	}
	return rows
}

func (r *report) diagnosisRows() []string {
	var rows []string
	for _, p := range r.pairs() {
		for i, c := range p.convergence {
			limitRequests, loam, watched := "–", "–", "–"
			limitCPU, watchedCPU, limitOthers := "–", "–", "–"
			if i < len(p.limits) {
				l := p.limits[i]
				limitRequests = requestsPerObject(l.requests, l.n)
				limitCPU = ms(l.cpu / time.Duration(l.n))
				limitOthers = fmt.Sprintf("%.2f", l.others)
			}
			if i < len(p.loamLimits) {
				loam = secs(p.loamLimits[i].seen)
			}
			if i < len(p.watched) {
				watched = secs(p.watched[i].seen)
				watchedCPU = ms(p.watched[i].cpu / time.Duration(c.n))
			}
			busy := c.reconcile.Sum / (float64(c.w) * c.busy.Seconds())
			rows = append(rows, fmt.Sprintf("| %d | %d | %d | %s | %s | %s | %s | %s / %s / %s | %s / %.2f | %.2f | %s (%s) | %s (%s) | %s | %.0f%% |\n",
				c.n, c.w, i+1, loam, watched, limitRequests, requestsPerObject(c.requests, c.n),
				limitCPU, watchedCPU, ms(c.cpu/time.Duration(c.n)),
				limitOthers, c.others,
				c.adds/float64(c.n),
				ms(meanOf(c.queueWait.Sum, c.queueWait.Count)), p99(c.queueWait),
				ms(meanOf(c.reconcile.Sum, c.reconcile.Count)), p99(c.reconcile),
				ms(c.applying/time.Duration(max(c.reconciles, 1))),
				100*busy))
		}
	}
	return rows
}

// durations returns f of each of v.
func durations[T any](v []T, f func(T) time.Duration) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

// median returns the median of d, the lower one of the middle two.
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(d))
	return s[(len(s)-1)/2]
}

// spread is the median of d in seconds, with the least and the most when
// there are several.
func spread(d []time.Duration) string {
	if len(d) == 1 {
		return secs(d[0])
	}
	return fmt.Sprintf("%s (%.2f–%.2f)", secs(median(d)), slices.Min(d).Seconds(), slices.Max(d).Seconds())
}

// requestsPerObject lists the requests by verb and resource, per object
// when there are at least a tenth as many as objects, and as a count
// otherwise.
func requestsPerObject(c requestCounts, n int) string {
	keys := slices.SortedFunc(maps.Keys(c), func(a, b requestKey) int {
		return cmp.Or(cmp.Compare(c[b], c[a]), cmp.Compare(a.String(), b.String()))
	})
	var parts []string
	for _, k := range keys {
		v := c[k]
		if v >= float64(n)/10 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, v/float64(n)))
		} else {
			parts = append(parts, fmt.Sprintf("%s ×%.0f", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

// perObjectHistogram says how many reconciles each object had in runs:
// the mean, and how many objects had each count.
func perObjectHistogram(runs []convergenceResult) string {
	all := map[int]int{}
	reconciles, objects := 0, 0
	for _, c := range runs {
		for k, v := range c.perObject {
			all[k] += v
		}
		reconciles += c.reconciles
		objects += c.n
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		parts = append(parts, fmt.Sprintf("%d×%d", all[k], k))
	}
	return fmt.Sprintf("%.2f (%s)", float64(reconciles)/float64(objects), strings.Join(parts, ", "))
}

// p99 is the 99th percentile of h, as quantile estimates it.
func p99(h metricdata.HistogramDataPoint[float64]) string {
	b, overflow := quantile(h, 0.99)
	if overflow {
		return "≥" + ms(seconds(b))
	}
	return ms(seconds(b))
}

func perObject(after, before uint64, n int) float64 {
	return (float64(after) - float64(before)) / float64(n)
}

func meanOf(sum float64, count uint64) time.Duration {
	if count == 0 {
		return 0
	}
	return seconds(sum / float64(count))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func ms(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// loadAverage returns the machine's load averages, as uptime prints them.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// cpuModel returns the CPU's model name.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown CPU"
}

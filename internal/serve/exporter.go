package serve

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/trace"
)

// MaxTargets bounds the series of each metric: tasks are aggregated by
// their name (comm at first sight) and place (systemd service and
// Kubernetes pod, target.Place), and names or places beyond this many
// (a fork bomb of distinct names, a --pid whose threads all rename, pods
// coming and going) go to the OtherTarget label, counted by
// rtscope_target_overflow_total.
const MaxTargets = 200

// OtherTarget is the label of tasks whose name came after MaxTargets others.
const OtherTarget = "_other"

// ClassicBuckets are the classic histogram bounds in seconds, 1 us to 1 s
// in 1-2-5 steps: the range of scheduling latencies worth telling apart.
var ClassicBuckets = []float64{1e-6, 2e-6, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6,
	1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1}

// nativeSchema: native histogram buckets grow by 2^(1/8), about the
// resolution of the engine's histogram (8 buckets per power of two).
const nativeSchema = 3

// hist is one metric's cumulative histogram (engine layout, ns).
type hist struct {
	count, sum, violations uint64
	buckets                [metric.Buckets]uint64
}

// add adds a task's metric. Its count is the samples its buckets hold:
// a histogram carry lost to a full notice ring (HistLost, counted in
// rtscope_lost_total) leaves them out, and a native histogram whose count
// differs from its buckets' is refused by Prometheus.
func (h *hist) add(ms *engine.MetricStats) {
	h.count += ms.Count - ms.HistLost
	h.sum += ms.Sum
	h.violations += ms.Violations
	for i, c := range ms.Hist {
		h.buckets[i] += uint64(c)
	}
}

// agg is what the tasks of one target name measured.
type agg struct {
	m                                    [metric.Count]hist
	wakeups, voluntary, preempted, timer uint64
	overruns                             uint64
	// noise parts by cause - 1: how many and their own time (engine.TaskStats.NoiseParts, NoiseNs)
	noiseParts, noiseNs [engine.NoiseCauseCount - 1]uint64
	tasks               uint64 // live tasks
	exited              uint64
	// health is the worst judgement of the target's tasks, live and
	// exited (report.Judge on their statistics): a Health.Rank.
	health int
}

// healthWords are the judgements by rank (report.Health.Rank).
var healthWords = []report.Health{report.HealthOK, report.HealthUnknown, report.HealthWarn, report.HealthFail}

// judged is the rank of the judgement of a task by its statistics, as the
// end of a watch judges it (without its windows: the causes they tell do
// not change a judgement without SLOs but through the hygiene they count).
func judged(st *engine.TaskStats) int {
	t := report.FromStats(st)
	report.Judge(t)
	return t.Health.Rank()
}

func (a *agg) add(st *engine.TaskStats) {
	a.health = max(a.health, judged(st))
	for i := range a.m {
		a.m[i].add(&st.M[i])
	}
	a.wakeups += st.Wakeups
	a.voluntary += st.SwitchesVoluntary
	a.preempted += st.SwitchesPreempted
	a.timer += st.TimerReleases
	a.overruns += st.Overruns
	for i := range a.noiseParts {
		a.noiseParts[i] += uint64(st.NoiseParts[i])
		a.noiseNs[i] += st.NoiseNs[i]
	}
}

func (a *agg) merge(b *agg) {
	for i := range a.m {
		x, y := &a.m[i], &b.m[i]
		x.count += y.count
		x.sum += y.sum
		x.violations += y.violations
		for j := range x.buckets {
			x.buckets[j] += y.buckets[j]
		}
	}
	a.wakeups += b.wakeups
	a.voluntary += b.voluntary
	a.preempted += b.preempted
	a.timer += b.timer
	a.overruns += b.overruns
	for i := range a.noiseParts {
		a.noiseParts[i] += b.noiseParts[i]
		a.noiseNs[i] += b.noiseNs[i]
	}
	a.tasks += b.tasks
	a.exited += b.exited
	a.health = max(a.health, b.health)
}

// seriesKey is a series' target, unit and pod labels in one string
// (target "\x00" unit "\x00" pod): comm and cgroup names hold no NUL.
func seriesKey(name string, p target.Place) string {
	return name + "\x00" + p.Unit + "\x00" + p.Pod
}

// seriesLabels are a seriesKey's label values: target, unit, pod.
func seriesLabels(key string) []string {
	lv := strings.SplitN(key, "\x00", 3)
	for len(lv) < 3 {
		lv = append(lv, "")
	}
	return lv
}

type causeKey struct {
	target, metric, cause string // target: a seriesKey
}

// pendingKey is a violation noticed since the last Tick, by task.
type pendingKey struct {
	id                uint64
	comm, metric, why string
	notAnalysed       bool
}

// Exporter turns the session's statistics into Prometheus metrics. The
// session's goroutine feeds it (Tick, Exit, Violation); scrapes read it
// (Collect); a mutex orders the two. Counters are cumulative since the
// agent started: an exited task's final statistics are folded into its
// target's total before the engine forgets them, so a total never goes
// down.
//
// Violations noticed (explained or not analysed) are published at the
// next Tick, with the statistics read then, which count every one of them
// (the kernel counts a violation before it queues its notice): at every
// scrape, explained + not analysed <= rtscope_slo_violations_total for each
// target and metric. Published as they came, they ran ahead of the total,
// which is read only every tick (232 counted, 612 noticed in one scrape at
// 500 violations a second; docs/metrics.md).
type Exporter struct {
	mu      sync.Mutex
	started time.Time
	label   map[uint64]string // tracking id -> seriesKey, fixed at first sight
	// place of a task, read when it started (Start) and kept until its
	// label is fixed, or it was in no Tick since the one before its start
	// (placesDue); placeOf reads it (nil: no unit and pod labels)
	places  map[uint64]startPlace
	placeOf func(tid uint32) (target.Place, error)
	ticks   uint64 // Ticks so far
	live    map[uint64]*engine.TaskStats
	done    map[string]*agg // exited tasks, by label
	names   map[string]bool // labels given out (MaxTargets)
	// overflow counts tasks labelled OtherTarget.
	overflow    uint64
	explained   map[causeKey]uint64
	notAnalysed map[causeKey]uint64
	pending     map[pendingKey]uint64 // noticed since the last Tick
	gone        map[uint64]string     // labels of the tasks folded since the last Tick
	counters    []uint64              // engine counters (engine.Counter*)
	memBytes    uint64
	run         engine.RunStats
	runEnabled  bool
	windowsLost uint64
	descs       exporterDescs
	ipi         ipiExport // serve --ipi (ipi.go)
}

type exporterDescs struct {
	hist                                                 [metric.Count]*prometheus.Desc
	violations, explained, notAnalysed                   *prometheus.Desc
	wakeups, switches, timer, overruns, tasks, exited    *prometheus.Desc
	lost, deferred, events, mem, bpfRun, bpfRuns, misses *prometheus.Desc
	overflow, started, health                            *prometheus.Desc
	noiseParts, noiseSeconds                             *prometheus.Desc
}

// MetricName is the Prometheus name of an engine metric's histogram.
func MetricName(m metric.ID) string {
	return "rtscope_" + strings.ReplaceAll(m.String(), "-", "_") + "_seconds"
}

// NewExporter returns an empty exporter.
func NewExporter() *Exporter {
	x := &Exporter{started: time.Now(), label: map[uint64]string{}, places: map[uint64]startPlace{}, live: map[uint64]*engine.TaskStats{},
		done: map[string]*agg{}, names: map[string]bool{}, explained: map[causeKey]uint64{},
		notAnalysed: map[causeKey]uint64{}, pending: map[pendingKey]uint64{}, gone: map[uint64]string{},
		ipi: newIPIExport()}
	d := &x.descs
	t := []string{"target", "unit", "pod"}
	for _, m := range metric.All() {
		d.hist[m] = prometheus.NewDesc(MetricName(m), m.Info().Desc+", per target.", t, nil)
	}
	tm := []string{"target", "unit", "pod", "metric"}
	d.violations = prometheus.NewDesc("rtscope_slo_violations_total", "Samples over their SLO, per target and metric (counted in the kernel: every one).", tm, nil)
	d.explained = prometheus.NewDesc("rtscope_slo_violations_explained_total", "SLO violations whose window was analysed, by the analysis' cause.", []string{"target", "unit", "pod", "metric", "cause"}, nil)
	d.notAnalysed = prometheus.NewDesc("rtscope_slo_violations_not_analysed_total", "SLO violations noticed but not analysed, by reason.", []string{"target", "unit", "pod", "metric", "reason"}, nil)
	d.wakeups = prometheus.NewDesc("rtscope_wakeups_total", "Wakeups of the target's tasks.", t, nil)
	d.switches = prometheus.NewDesc("rtscope_context_switches_total", "Switches out of the target's tasks: voluntary (block, sleep) or preempted.", []string{"target", "unit", "pod", "kind"}, nil)
	d.timer = prometheus.NewDesc("rtscope_timer_releases_total", "Timer releases (wakeups by a timer) of the target's tasks.", t, nil)
	d.overruns = prometheus.NewDesc("rtscope_overruns_total", "Missed deadlines: armed already past, or skipped.", t, nil)
	d.health = prometheus.NewDesc("rtscope_target_health", "The worst judgement of the target's tasks since the agent started, "+
		"as its health label and as a value: 0 ok, 1 unknown (too few events), 2 warn (real-time hygiene), 3 fail (an SLO violated, a period missed).",
		[]string{"target", "unit", "pod", "health"}, nil)
	tc := []string{"target", "unit", "pod", "cause"}
	d.noiseParts = prometheus.NewDesc("rtscope_noise_parts_total", "Parts of the target's tasks' noise intervals, by cause (docs/noise.md).", tc, nil)
	d.noiseSeconds = prometheus.NewDesc("rtscope_noise_part_seconds_total", "Own time of those parts, by cause (a nested part's time taken out of the other's).", tc, nil)
	d.tasks = prometheus.NewDesc("rtscope_tasks", "Tasks of the target tracked now.", t, nil)
	d.exited = prometheus.NewDesc("rtscope_tasks_exited_total", "Tasks of the target that exited while tracked (their counts stay in the totals).", t, nil)
	d.lost = prometheus.NewDesc("rtscope_lost_total", "What was lost, by kind: notices (notice ring full), tasks_not_tracked (stats map full or task storage failed), stacks, windows (worst-case windows not cut).", []string{"kind"}, nil)
	d.deferred = prometheus.NewDesc("rtscope_tracking_deferred_total", "Tasks tracked at their next switch-in because task storage was busy (not lost).", nil, nil)
	d.events = prometheus.NewDesc("rtscope_flight_events_total", "Events written to the flight recorder.", nil, nil)
	d.mem = prometheus.NewDesc("rtscope_bpf_memory_bytes", "Kernel memory of the engine's BPF maps and programs (memlock as the kernel reports it).", nil, nil)
	d.bpfRun = prometheus.NewDesc("rtscope_bpf_run_seconds_total", "Time the engine's BPF programs ran (only while kernel.bpf_stats_enabled=1; absent otherwise).", nil, nil)
	d.bpfRuns = prometheus.NewDesc("rtscope_bpf_runs_total", "Runs of the engine's BPF programs (only while kernel.bpf_stats_enabled=1; absent otherwise).", nil, nil)
	d.misses = prometheus.NewDesc("rtscope_bpf_recursion_misses_total", "Program runs the kernel skipped because another BPF program ran on the CPU: events not seen.", nil, nil)
	d.overflow = prometheus.NewDesc("rtscope_target_overflow_total", "Tasks labelled "+OtherTarget+" because MaxTargets names were already given out.", nil, nil)
	d.started = prometheus.NewDesc("rtscope_start_time_seconds", "When the agent started, Unix time.", nil, nil)
	return x
}

// SetPlaces makes the exporter label each task's series with its place
// (unit and pod), read by placeOf (target.TaskPlace) when the task starts
// or, failing that, when its statistics are first read. Call it before
// the session starts.
func (x *Exporter) SetPlaces(placeOf func(tid uint32) (target.Place, error)) {
	x.placeOf = placeOf
}

// Start reads the place of a task that was just tracked
// (watch.Observer.Start), while it still runs: a short task has often exited
// by the next Tick.
func (x *Exporter) Start(id uint64, tid uint32) {
	if x.placeOf == nil {
		return
	}
	p, err := x.placeOf(tid)
	if err != nil {
		return // gone already: read again when its statistics come
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, fixed := x.label[id]; !fixed {
		x.places[id] = startPlace{p, x.ticks}
	}
}

// startPlace is a task's place read at its start, and the Ticks before it.
type startPlace struct {
	target.Place
	ticks uint64
}

// placesDue drops the places of tasks started before the last Tick and in
// none since (nor exited, which fixes a label): gone before any statistics
// were read, their exit unseen (a notice lost), they would never fix a
// label, and under task churn the map grew with every one of them.
// Called with mu held, after setLive.
func (x *Exporter) placesDue() {
	x.ticks++
	for id, p := range x.places {
		if p.ticks+2 <= x.ticks {
			delete(x.places, id)
		}
	}
}

// labelOf returns (and fixes) the series of a task: its name and place at
// first sight, so that a rename does not move its counts between series.
func (x *Exporter) labelOf(st *engine.TaskStats) string {
	if l, ok := x.label[st.Id]; ok {
		return l
	}
	comm := engine.CommString(st.Comm)
	if comm == "" {
		return seriesKey("unknown", target.Place{}) // not fixed: the name comes with its statistics
	}
	sp, ok := x.places[st.Id]
	p := sp.Place
	if !ok && x.placeOf != nil {
		p, _ = x.placeOf(st.Tid) // a task gone already has no place
	}
	delete(x.places, st.Id)
	l := x.nameLabel(seriesKey(comm, p))
	x.label[st.Id] = l
	return l
}

// nameLabel is the series key, given out if there is room (MaxTargets).
func (x *Exporter) nameLabel(key string) string {
	if x.names[key] {
		return key
	}
	if len(x.names) >= MaxTargets {
		x.overflow++
		return seriesKey(OtherTarget, target.Place{})
	}
	x.names[key] = true
	return key
}

// Tick replaces the live tasks' statistics and the engine's own counters
// (watch.Observer.Tick).
func (x *Exporter) Tick(e *engine.Engine, live []*engine.TaskStats, windowsLost uint64) {
	counters := e.Counters()
	mem := e.MemoryBytes()
	run, enabled, err := e.ProgramStats()
	ipis, ipiErr := e.IPIs()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.setLive(live)
	x.placesDue()
	x.publish()
	x.tickIPIs(ipis, ipiErr == nil)
	x.counters = counters[:]
	x.windowsLost = windowsLost
	x.memBytes = mem
	if err == nil {
		x.run, x.runEnabled = run, enabled
	}
}

// tick replaces the live tasks' statistics and publishes the violations
// noticed since the last one, as Tick without an engine (tests).
func (x *Exporter) tick(live []*engine.TaskStats) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.setLive(live)
	x.placesDue()
	x.publish()
}

// publish counts the violations noticed since the last Tick under their
// task's label: fixed by its statistics, or its last one if it exited
// since. Called with mu held, after setLive.
func (x *Exporter) publish() {
	for k, n := range x.pending {
		l, ok := x.label[k.id]
		if !ok {
			l, ok = x.gone[k.id]
		}
		if !ok {
			// Never read (gone before any tick and its exit unseen): by
			// the name the session knew, not fixed.
			l = seriesKey("unknown", target.Place{})
			if k.comm != "" {
				l = x.nameLabel(seriesKey(k.comm, target.Place{}))
			}
		}
		ck := causeKey{l, k.metric, k.why}
		if k.notAnalysed {
			x.notAnalysed[ck] += n
		} else {
			x.explained[ck] += n
		}
	}
	clear(x.pending)
	clear(x.gone)
}

// setLive replaces the live tasks' statistics. Called with mu held.
func (x *Exporter) setLive(live []*engine.TaskStats) {
	next := make(map[uint64]*engine.TaskStats, len(live))
	for _, st := range live {
		x.labelOf(st)
		next[st.Id] = st
	}
	for id, st := range x.live {
		if next[id] == nil {
			// Gone without its exit seen (its final statistics could not
			// be read): its last counts stay in the total, never dropped.
			x.fold(st)
		}
	}
	x.live = next
}

// Exit folds a task's final statistics into its target's total
// (watch.Observer.Exit).
func (x *Exporter) Exit(st *engine.TaskStats) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.fold(st)
}

// fold moves a task's statistics into its target's total. Called with mu held.
func (x *Exporter) fold(st *engine.TaskStats) {
	l := x.labelOf(st)
	a := x.done[l]
	if a == nil {
		a = &agg{}
		x.done[l] = a
	}
	a.add(st)
	a.exited++
	delete(x.live, st.Id)
	delete(x.label, st.Id)
	delete(x.places, st.Id)
	x.gone[st.Id] = l // for its violations noticed since the last Tick
}

// Violation counts one SLO violation noticed, by cause or by why it was not
// analysed (watch.Observer.Violation), from the next Tick on.
func (x *Exporter) Violation(id uint64, comm string, m metric.ID, cause, notAnalysed string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := pendingKey{id: id, comm: comm, metric: m.String(), why: cause}
	if notAnalysed != "" {
		k.notAnalysed, k.why = true, reasonName(notAnalysed)
	} else if cause == "" {
		k.why = "none"
	}
	x.pending[k]++
}

// reasonName is the short label of a report.NotAnalysed* reason.
func reasonName(r string) string {
	switch r {
	case report.NotAnalysedBudget:
		return "budget"
	case report.NotAnalysedNoTrace:
		return "no_trace"
	case report.NotAnalysedKernelLimit:
		return "kernel_limit"
	}
	return "other"
}

// Describe sends nothing: the exporter is an unchecked collector, its
// series come and go with targets.
func (x *Exporter) Describe(chan<- *prometheus.Desc) {}

// totals sums exited and live tasks by label. Called with mu held.
func (x *Exporter) totals() map[string]*agg {
	out := map[string]*agg{}
	get := func(l string) *agg {
		a := out[l]
		if a == nil {
			a = &agg{}
			out[l] = a
		}
		return a
	}
	for l, a := range x.done {
		get(l).merge(a)
	}
	for id, st := range x.live {
		a := get(x.label[id])
		a.add(st)
		a.tasks++
	}
	return out
}

// Collect sends every series (prometheus.Collector).
func (x *Exporter) Collect(ch chan<- prometheus.Metric) {
	x.mu.Lock()
	defer x.mu.Unlock()
	d := &x.descs
	tot := x.totals()
	labels := make([]string, 0, len(tot))
	for l := range tot {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	counter := func(desc *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), lv...)
	}
	for _, l := range labels {
		a := tot[l]
		lv := seriesLabels(l)
		with := func(more ...string) []string { return append(slices.Clone(lv), more...) }
		for _, m := range metric.All() {
			h := &a.m[m]
			if h.count == 0 {
				continue
			}
			ch <- &histMetric{desc: d.hist[m], h: h, labels: lv, created: x.started}
			counter(d.violations, h.violations, with(m.String())...)
		}
		counter(d.wakeups, a.wakeups, lv...)
		counter(d.switches, a.voluntary, with("voluntary")...)
		counter(d.switches, a.preempted, with("preempted")...)
		counter(d.timer, a.timer, lv...)
		counter(d.overruns, a.overruns, lv...)
		x.collectNoise(ch, a, lv)
		counter(d.exited, a.exited, lv...)
		ch <- prometheus.MustNewConstMetric(d.tasks, prometheus.GaugeValue, float64(a.tasks), lv...)
		ch <- prometheus.MustNewConstMetric(d.health, prometheus.GaugeValue, float64(a.health), with(string(healthWords[a.health]))...)
	}
	for k, v := range x.explained {
		counter(d.explained, v, append(seriesLabels(k.target), k.metric, k.cause)...)
	}
	for k, v := range x.notAnalysed {
		counter(d.notAnalysed, v, append(seriesLabels(k.target), k.metric, k.cause)...)
	}
	if x.counters != nil {
		c := x.counters
		counter(d.lost, c[engine.CounterNoticeLost], "notices")
		counter(d.lost, c[engine.CounterStatsFull]+c[engine.CounterStorageFail], "tasks_not_tracked")
		counter(d.lost, c[engine.CounterStackLost], "stacks")
		counter(d.deferred, c[engine.CounterTrackDeferred])
		counter(d.events, c[engine.CounterEvents])
	}
	counter(d.lost, x.windowsLost, "windows")
	ch <- prometheus.MustNewConstMetric(d.mem, prometheus.GaugeValue, float64(x.memBytes))
	if x.runEnabled {
		ch <- prometheus.MustNewConstMetric(d.bpfRun, prometheus.CounterValue, x.run.Runtime.Seconds())
		counter(d.bpfRuns, x.run.Runs)
	}
	counter(d.misses, x.run.Misses)
	counter(d.overflow, x.overflow)
	x.collectIPIs(ch)
	ch <- prometheus.MustNewConstMetric(d.started, prometheus.GaugeValue, float64(x.started.UnixNano())/1e9)
}

// collectNoise sends a target's noise parts by cause, the causes it had
// any of (none without noise).
func (x *Exporter) collectNoise(ch chan<- prometheus.Metric, a *agg, lv []string) {
	for i, n := range a.noiseParts {
		c, ok := trace.NoiseCauses[uint8(i+1)]
		if !ok || (n == 0 && a.noiseNs[i] == 0) {
			continue
		}
		l := append(slices.Clone(lv), string(c))
		ch <- prometheus.MustNewConstMetric(x.descs.noiseParts, prometheus.CounterValue, float64(n), l...)
		ch <- prometheus.MustNewConstMetric(x.descs.noiseSeconds, prometheus.CounterValue, float64(a.noiseNs[i])/1e9, l...)
	}
}

// histMetric is one target's histogram of one metric, with classic buckets
// and native (schema 3) buckets both: prometheus.NewConstHistogram and
// NewConstNativeHistogram each give only one kind.
type histMetric struct {
	desc    *prometheus.Desc
	h       *hist
	labels  []string // target, unit, pod
	created time.Time
}

func (hm *histMetric) Desc() *prometheus.Desc { return hm.desc }

// Write converts the engine's log-linear buckets (8 linear sub-buckets per
// power of two of ns). A classic bucket `le` counts the engine buckets whose
// every value is at most le (a lower bound: values within ±6.25% of a bound
// may count above it). A native bucket gets each engine bucket by its
// midpoint; exact zeros go to the zero bucket.
func (hm *histMetric) Write(out *dto.Metric) error {
	h := hm.h
	classic := make([]*dto.Bucket, len(ClassicBuckets))
	cum := make([]uint64, len(ClassicBuckets))
	native := map[int]int64{}
	var zero uint64
	for b, c := range h.buckets {
		if c == 0 {
			continue
		}
		lo, hi := metric.BucketRange(b)
		top := float64(hi-1) / 1e9
		for i, le := range ClassicBuckets {
			if top <= le {
				cum[i] += c
			}
		}
		if hi-lo == 1 && lo == 0 {
			zero += c
			continue
		}
		mid := (float64(lo) + float64(hi-lo)/2) / 1e9
		if b == metric.Buckets-1 {
			mid = float64(lo) / 1e9 // the last bucket is open-ended
		}
		idx := int(math.Ceil(math.Log2(mid) * (1 << nativeSchema)))
		native[idx] += int64(c)
	}
	for i, le := range ClassicBuckets {
		classic[i] = &dto.Bucket{UpperBound: proto.Float64(le), CumulativeCount: proto.Uint64(cum[i])}
	}
	spans, deltas := nativeSpans(native)
	// Sorted by name, as client_golang's own metrics.
	out.Label = []*dto.LabelPair{{Name: proto.String("pod"), Value: proto.String(hm.labels[2])},
		{Name: proto.String("target"), Value: proto.String(hm.labels[0])}, {Name: proto.String("unit"), Value: proto.String(hm.labels[1])}}
	out.Histogram = &dto.Histogram{
		SampleCount:      proto.Uint64(h.count),
		SampleSum:        proto.Float64(float64(h.sum) / 1e9),
		Bucket:           classic,
		CreatedTimestamp: timestamppb.New(hm.created),
		Schema:           proto.Int32(nativeSchema),
		ZeroThreshold:    proto.Float64(0),
		ZeroCount:        proto.Uint64(zero),
		PositiveSpan:     spans,
		PositiveDelta:    deltas,
	}
	return nil
}

// nativeSpans encodes sparse bucket counts as native histogram spans and
// deltas (each count as the difference from the previous bucket's).
func nativeSpans(b map[int]int64) ([]*dto.BucketSpan, []int64) {
	idx := make([]int, 0, len(b))
	for i := range b {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var spans []*dto.BucketSpan
	var deltas []int64
	var prev int64
	for n, i := range idx {
		switch {
		case n == 0:
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(int32(i)), Length: proto.Uint32(1)})
		case i == idx[n-1]+1:
			*spans[len(spans)-1].Length++
		default:
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(int32(i - idx[n-1] - 1)), Length: proto.Uint32(1)})
		}
		deltas = append(deltas, b[i]-prev)
		prev = b[i]
	}
	if len(spans) == 0 {
		// A native histogram without buckets still needs a span, or the
		// client's text/protobuf encoders take it for a classic one.
		spans = []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(0)}}
	}
	return spans, deltas
}

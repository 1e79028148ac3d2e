package serve

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
)

func task(id uint64, comm string, latencies ...uint64) *engine.TaskStats {
	st := &engine.TaskStats{Id: id}
	for i := 0; i < len(comm) && i < 15; i++ {
		st.Comm[i] = int8(comm[i])
	}
	m := &st.M[metric.Latency]
	for _, v := range latencies {
		m.Count++
		m.Sum += v
		m.Hist[metric.Bucket(v)]++
	}
	st.Wakeups = uint64(len(latencies))
	return st
}

// gather returns the exporter's families by name.
func gather(t *testing.T, x *Exporter) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(x)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func latencyOf(t *testing.T, x *Exporter, target string) *dto.Histogram {
	t.Helper()
	f := gather(t, x)["rtscope_latency_seconds"]
	if f == nil {
		return nil
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "target" && l.GetValue() == target {
				return m.Histogram
			}
		}
	}
	return nil
}

// An exited task's counts stay in its target's total: the series never go
// down across exits, and live and exited tasks of one name add up.
func TestCumulativeAcrossExits(t *testing.T) {
	x := NewExporter()
	x.tick([]*engine.TaskStats{task(1, "ctl", 1000, 2000), task(2, "ctl", 3000)})
	if h := latencyOf(t, x, "ctl"); h.GetSampleCount() != 3 {
		t.Fatalf("two live tasks: count %d, want 3", h.GetSampleCount())
	}
	// Task 1 runs on, then exits with 3 samples.
	x.Exit(task(1, "ctl", 1000, 2000, 4000))
	x.tick([]*engine.TaskStats{task(2, "ctl", 3000, 5000)})
	h := latencyOf(t, x, "ctl")
	if h.GetSampleCount() != 5 || math.Abs(h.GetSampleSum()-15e-6) > 1e-12 {
		t.Fatalf("after an exit: count %d sum %v, want 5 and 15e-6", h.GetSampleCount(), h.GetSampleSum())
	}
	// Task 2 vanishes without its exit seen: its last counts are kept.
	x.tick(nil)
	if h := latencyOf(t, x, "ctl"); h.GetSampleCount() != 5 {
		t.Fatalf("a task gone unseen: count %d, want 5 (never down)", h.GetSampleCount())
	}
	f := gather(t, x)["rtscope_tasks_exited_total"]
	if got := f.Metric[0].Counter.GetValue(); got != 2 {
		t.Errorf("exited %v, want 2", got)
	}
}

// A rename does not move a task's counts between series: its label is the
// name it had when first seen.
func TestLabelFixedAtFirstSight(t *testing.T) {
	x := NewExporter()
	x.tick([]*engine.TaskStats{task(1, "before", 1000)})
	x.tick([]*engine.TaskStats{task(1, "after", 1000, 2000)})
	if h := latencyOf(t, x, "before"); h == nil || h.GetSampleCount() != 2 {
		t.Errorf("renamed task: %v", h)
	}
	if latencyOf(t, x, "after") != nil {
		t.Error("a series for the new name")
	}
}

// Names beyond MaxTargets share one label, counted.
func TestLabelCardinalityBounded(t *testing.T) {
	x := NewExporter()
	var live []*engine.TaskStats
	for i := 0; i < MaxTargets+10; i++ {
		live = append(live, task(uint64(i+1), "t"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+string(rune('a'+i/26)), 1000))
	}
	x.tick(live)
	f := gather(t, x)["rtscope_latency_seconds"]
	if len(f.Metric) != MaxTargets+1 {
		t.Errorf("%d series, want %d", len(f.Metric), MaxTargets+1)
	}
	if h := latencyOf(t, x, OtherTarget); h.GetSampleCount() != 10 {
		t.Errorf("%s: %d samples, want 10", OtherTarget, h.GetSampleCount())
	}
	if v := gather(t, x)["rtscope_target_overflow_total"].Metric[0].Counter.GetValue(); v != 10 {
		t.Errorf("overflow %v, want 10", v)
	}
}

// Classic buckets count the engine buckets entirely below the bound; the
// native buckets hold every sample, each within a bucket of its value.
func TestHistogramBuckets(t *testing.T) {
	x := NewExporter()
	vals := []uint64{0, 900, 1000, 1500, 20_000, 1_000_000, 3_000_000_000}
	x.tick([]*engine.TaskStats{task(1, "ctl", vals...)})
	h := latencyOf(t, x, "ctl")
	// 900 ns shares [896, 1024) ns with values above 1 us: not counted at le=1e-6.
	want := map[float64]uint64{1e-6: 1, 2e-6: 4, 50e-6: 5, 1e-3: 5, 2e-3: 6, 1: 6}
	for _, b := range h.Bucket {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	// The first engine bucket is [0, 128) ns, not exact zeros: it goes to
	// the native buckets by its midpoint.
	if h.GetZeroCount() != 0 {
		t.Errorf("zero bucket %d, want 0", h.GetZeroCount())
	}
	// Decode the native buckets and check each sample's bucket.
	var total int64
	idx, count := 0, int64(0)
	got := map[int]int64{}
	d := 0
	for _, sp := range h.PositiveSpan {
		idx += int(sp.GetOffset())
		for range sp.GetLength() {
			count += h.PositiveDelta[d]
			d++
			got[idx] = count
			total += count
			idx++
		}
	}
	if total+int64(h.GetZeroCount()) != int64(len(vals)) {
		t.Fatalf("native buckets hold %d samples, want %d", total+int64(h.GetZeroCount()), len(vals))
	}
	for _, v := range vals[1:] {
		i := int(math.Ceil(math.Log2(float64(v)/1e9) * 8))
		if got[i]+got[i-1]+got[i+1] == 0 {
			t.Errorf("%d ns: no sample near native bucket %d (%v)", v, i, got)
		}
	}
}

// A histogram carry lost in the kernel (the notice ring was full) leaves
// its samples out of the buckets: the exported count is what the buckets
// hold, so that the native histogram stays valid.
func TestHistogramCarryLost(t *testing.T) {
	x := NewExporter()
	st := task(1, "ctl", 1000, 2000, 3000)
	m := &st.M[metric.Latency]
	m.Count += 1 << 16 // 65536 more samples, their carry lost
	m.HistLost = 1 << 16
	x.tick([]*engine.TaskStats{st})
	h := latencyOf(t, x, "ctl")
	var total, run int64
	for _, d := range h.PositiveDelta {
		run += d // deltas: the running sum is each bucket's count
		total += run
	}
	if h.GetSampleCount() != 3 || uint64(total)+h.GetZeroCount() != h.GetSampleCount() {
		t.Errorf("count %d, native buckets %d; want 3 and 3", h.GetSampleCount(), uint64(total)+h.GetZeroCount())
	}
}

// violating returns task stats with v latency violations among n samples.
func violating(id uint64, comm string, n, v uint64) *engine.TaskStats {
	st := task(id, comm)
	m := &st.M[metric.Latency]
	m.Count, m.Sum, m.Violations = n, n*1000, v
	m.Hist[metric.Bucket(1000)] = uint32(n)
	return st
}

// counts returns the value of each series of family name by its labels
// (name=value pairs joined by commas, in the exposition's order).
func counts(t *testing.T, x *Exporter, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	f := gather(t, x)[name]
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		var ls []string
		for _, l := range m.Label {
			if l.GetValue() != "" { // Prometheus: an empty label is no label
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
		}
		out[strings.Join(ls, ",")] = m.Counter.GetValue()
	}
	return out
}

// Violations are counted by cause, and by reason when not analysed, and
// published with the statistics of the next tick, which count every one of
// them: at every scrape explained + not analysed <= violations_total, for
// each target and metric, also for a task that exits before any tick
// (labelled by its name, not "unknown"), and nothing is kept of an exited
// task's id.
func TestViolationCounting(t *testing.T) {
	x := NewExporter()
	noticed := func(target string) float64 {
		var n float64
		for _, name := range []string{"rtscope_slo_violations_explained_total", "rtscope_slo_violations_not_analysed_total"} {
			for ls, v := range counts(t, x, name) {
				if strings.Contains(ls, "metric=latency,") && strings.HasSuffix(ls, "target="+target) {
					n += v
				}
			}
		}
		return n
	}
	check := func(when string, target string, wantNoticed, wantTotal float64) {
		t.Helper()
		total := counts(t, x, "rtscope_slo_violations_total")["metric=latency,target="+target]
		got := noticed(target)
		if got != wantNoticed || total != wantTotal || got > total {
			t.Errorf("%s: %s noticed %v of %v violations, want %v of %v (never more than counted)", when, target, got, total, wantNoticed, wantTotal)
		}
	}
	x.tick([]*engine.TaskStats{violating(7, "ctl", 10, 0)})
	// The kernel counts 3 violations; the session notices them before the
	// next tick reads the statistics.
	x.Violation(7, "ctl", metric.Latency, "interference", "")
	x.Violation(7, "ctl", metric.Latency, "interference", "")
	x.Violation(7, "ctl", metric.Latency, "", report.NotAnalysedBudget)
	check("before the tick", "ctl", 0, 0)
	x.tick([]*engine.TaskStats{violating(7, "ctl", 20, 3)})
	check("at the tick", "ctl", 3, 3)
	if c := counts(t, x, "rtscope_slo_violations_explained_total")["cause=interference,metric=latency,target=ctl"]; c != 2 {
		t.Errorf("explained by interference: %v, want 2", c)
	}
	if c := counts(t, x, "rtscope_slo_violations_not_analysed_total")["metric=latency,reason=budget,target=ctl"]; c != 1 {
		t.Errorf("not analysed for the budget: %v, want 1", c)
	}
	// 5 more counted, 1 noticed (the kernel notices at most one a ms).
	x.Violation(7, "ctl", metric.Latency, "", "")
	x.tick([]*engine.TaskStats{violating(7, "ctl", 30, 8)})
	check("not every violation noticed", "ctl", 4, 8)
	if c := counts(t, x, "rtscope_slo_violations_explained_total")["cause=none,metric=latency,target=ctl"]; c != 1 {
		t.Errorf("explained without a cause: %v, want 1", c)
	}
	// Task 9 starts, violates twice and exits between two ticks: its
	// notices come before its exit (the ring's order), its final
	// statistics with its exit.
	x.Violation(9, "burst", metric.Latency, "hardirq", "")
	x.Violation(9, "", metric.Latency, "", report.NotAnalysedBudget) // not read yet: no name
	x.Exit(violating(9, "burst", 4, 2))
	check("exited before a tick, until the tick", "burst", 0, 2)
	x.tick([]*engine.TaskStats{violating(7, "ctl", 30, 8)})
	check("exited before a tick", "burst", 2, 2)
	if c := counts(t, x, "rtscope_slo_violations_not_analysed_total"); c["metric=latency,reason=budget,target=unknown"] != 0 {
		t.Errorf("a violation of an exited task labelled unknown: %v", c)
	}
	// Task 7 exits too: its last violations published at the next tick
	// under its label, and nothing of either id stays.
	x.Violation(7, "ctl", metric.Latency, "interference", "")
	x.Exit(violating(7, "ctl", 31, 9))
	x.tick(nil)
	check("after the exit", "ctl", 5, 9)
	if len(x.label) != 0 || len(x.gone) != 0 || len(x.pending) != 0 || len(x.live) != 0 {
		t.Errorf("kept after every task exited: %d labels, %d gone, %d pending, %d live", len(x.label), len(x.gone), len(x.pending), len(x.live))
	}
}

func TestConfigErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"targets:\n  - comm: ctl\n  - pid: 1\n    tid: 2\n", "line 3: a target has exactly one of comm, pid, tid or cgroup"},
		{"targets:\n  - comm: a-name-longer-than-fifteen\n", "line 2: comm"},
		{"slo:\n  - latency=50us\n  - latncy=1ms\n", "line 3: SLO \"latncy=1ms\""},
		{"listen: x\ntargetz: []\n", "line 2: field targetz not found"},
		{"targets:\n  - pid: abc\n", "line 2: cannot unmarshal"},
	} {
		_, err := ParseConfig("f.yaml", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
	cfg, err := ParseConfig("f.yaml", []byte("listen: 127.0.0.1:1\ntargets:\n  - comm: ctl\n  - pid: 5\nslo: [latency=50us]\n"))
	if err != nil || len(cfg.Targets) != 2 || cfg.Listen != "127.0.0.1:1" || len(cfg.SLO) != 1 {
		t.Errorf("good config: %+v %v", cfg, err)
	}
	if _, err := ParseConfig("empty", nil); err != nil {
		t.Errorf("empty config: %v", err)
	}
}

// Series carry the tasks' place (unit, pod) beside their name: read when a
// task starts, so that a task gone by the next tick keeps it; a task whose
// start was missed is placed when first read; places are bounded with the
// names (MaxTargets).
func TestSeriesByPlace(t *testing.T) {
	places := map[uint32]target.Place{
		1: target.CgroupPlace("/system.slice/foo.service"),
		2: target.CgroupPlace("/system.slice/foo.service/sub"),
		3: target.CgroupPlace("/system.slice/bar.service"),
		4: target.CgroupPlace("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12ab_34cd.slice/cri-containerd-x.scope"),
		5: target.CgroupPlace("/system.slice/foo.service"),
	}
	alive := map[uint32]bool{1: true, 2: true, 3: true, 4: true, 5: true}
	x := NewExporter()
	x.SetPlaces(func(tid uint32) (target.Place, error) {
		if !alive[tid] {
			return target.Place{}, errors.New("gone")
		}
		return places[tid], nil
	})
	placed := func(id uint64, comm string, lat ...uint64) *engine.TaskStats {
		st := task(id, comm, lat...)
		st.Tid = uint32(id)
		return st
	}
	for id := uint64(1); id <= 5; id++ {
		if id != 3 { // 3's start notice was lost: placed at the tick
			x.Start(id, uint32(id))
		}
	}
	alive[5] = false
	x.Exit(placed(5, "worker", 1000)) // exited before any tick: placed at its start
	x.tick([]*engine.TaskStats{placed(1, "worker", 1000), placed(2, "worker", 2000, 3000),
		placed(3, "worker", 1000), placed(4, "worker", 1000, 1000, 1000)})
	got := counts(t, x, "rtscope_wakeups_total")
	want := map[string]float64{"target=worker,unit=foo.service": 4, "target=worker,unit=bar.service": 1, "pod=12ab-34cd,target=worker": 3}
	if len(got) != len(want) {
		t.Errorf("wakeups by series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("wakeups{%s} = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if c := counts(t, x, "rtscope_context_switches_total"); len(c) != 6 {
		t.Errorf("context switches: %d series, want 6 (3 places, 2 kinds): %v", len(c), c)
	}
	if len(x.places) != 0 {
		t.Errorf("%d places kept after every task got its label", len(x.places))
	}
	// Pods coming and going: the series stay bounded.
	y := NewExporter()
	y.SetPlaces(func(tid uint32) (target.Place, error) { return target.Place{Pod: strconv.Itoa(int(tid))}, nil })
	var live []*engine.TaskStats
	for i := 1; i <= MaxTargets+30; i++ {
		live = append(live, placed(uint64(i), "worker", 1000))
	}
	y.tick(live)
	if n := len(counts(t, y, "rtscope_wakeups_total")); n != MaxTargets+1 {
		t.Errorf("%d series for %d pods, want %d", n, MaxTargets+30, MaxTargets+1)
	}
	if v := counts(t, y, "rtscope_wakeups_total")["target="+OtherTarget]; v != 30 {
		t.Errorf("%s: %v wakeups, want 30", OtherTarget, v)
	}
}

// healthOf is the target's rtscope_target_health: its health label and value.
func healthOf(t *testing.T, x *Exporter, target string) (string, float64) {
	t.Helper()
	f := gather(t, x)["rtscope_target_health"]
	if f == nil {
		t.Fatal("no rtscope_target_health")
	}
	for _, m := range f.Metric {
		var tg, h string
		for _, l := range m.Label {
			switch l.GetName() {
			case "target":
				tg = l.GetValue()
			case "health":
				h = l.GetValue()
			}
		}
		if tg == target {
			return h, m.Gauge.GetValue()
		}
	}
	t.Fatalf("no health for %s", target)
	return "", 0
}

// /metrics has each target's health, judged as watch judges a task: the
// worst of its tasks, exited ones included.
func TestTargetHealth(t *testing.T) {
	x := NewExporter()
	var lat []uint64
	for i := 0; i < 50; i++ {
		lat = append(lat, 10000)
	}
	few := task(2, "few", 1000)
	late := task(3, "loop", lat...)
	late.NominalPeriod, late.Overruns = 1000000, 3
	late.M[metric.Iteration].Count = 50
	x.tick([]*engine.TaskStats{task(1, "calm", lat...), few, late})
	for target, want := range map[string]report.Health{"calm": report.HealthOK, "few": report.HealthUnknown, "loop": report.HealthFail} {
		if h, v := healthOf(t, x, target); h != string(want) || int(v) != want.Rank() {
			t.Errorf("%s: health %s %v, want %s %d", target, h, v, want, want.Rank())
		}
	}
	x.Exit(late)
	x.tick([]*engine.TaskStats{task(1, "calm", lat...), task(4, "loop", lat...)})
	if h, _ := healthOf(t, x, "loop"); h != string(report.HealthFail) {
		t.Errorf("an exited task's failure forgotten: %s", h)
	}
}

// TestChurnLeavesExporterBounded: 10,000 short tasks through the
// exporter's paths (start, then an exit seen; gone from the live tasks
// with the exit unseen; never read at all: the exit notice lost) leave
// no per-task state behind, and one series a name.
func TestChurnLeavesExporterBounded(t *testing.T) {
	x := NewExporter()
	x.SetPlaces(func(tid uint32) (target.Place, error) { return target.CgroupPlace("/system.slice/churn.service"), nil })
	const tasks, perTick = 10000, 20
	var live []*engine.TaskStats
	seen := uint64(0) // exited or in a tick: counted in the totals
	for id := uint64(1); id <= tasks; id++ {
		x.Start(id, uint32(id))
		st := task(id, "churn", 1000)
		st.Tid = uint32(id)
		switch id % 3 {
		case 0:
			x.Exit(st)
			seen++
		case 1:
			live = append(live, st) // in one tick's live tasks, gone from the next
			seen++
		}
		if id%perTick == 0 {
			x.tick(live)
			live = live[:0]
		}
	}
	x.tick(nil)
	x.tick(nil)
	if n := len(x.label) + len(x.places) + len(x.live) + len(x.gone) + len(x.pending); n != 0 {
		t.Errorf("per-task state after %d tasks: %d labels, %d places, %d live, %d gone, %d pending",
			tasks, len(x.label), len(x.places), len(x.live), len(x.gone), len(x.pending))
	}
	if len(x.names) != 1 || len(x.done) != 1 {
		t.Errorf("%d names, %d totals, want one each", len(x.names), len(x.done))
	}
	if a := x.done[seriesKey("churn", target.CgroupPlace("/system.slice/churn.service"))]; a == nil {
		t.Error("no total under the place's series")
	} else if a.exited != seen {
		t.Errorf("exited counted: %d, want %d (the tasks seen)", a.exited, seen)
	}
}

package serve

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
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
		if m.Label[0].GetValue() == target {
			return m.Histogram
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
	want := map[float64]uint64{1e-6: 2, 2e-6: 4, 50e-6: 5, 1e-3: 5, 2e-3: 6, 1: 6}
	for _, b := range h.Bucket {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if h.GetZeroCount() != 1 {
		t.Errorf("zero bucket %d, want 1", h.GetZeroCount())
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

// Violations are counted by cause, and by reason when not analysed.
func TestViolationCauses(t *testing.T) {
	x := NewExporter()
	x.tick([]*engine.TaskStats{task(7, "ctl", 1000)})
	x.Violation(7, "ctl", metric.Cycle, "interference", "")
	x.Violation(7, "ctl", metric.Cycle, "interference", "")
	x.Violation(7, "ctl", metric.Cycle, "", "analysis budget: windows a second beyond the limit")
	f := gather(t, x)
	if v := f["rtscope_slo_violations_explained_total"].Metric[0].Counter.GetValue(); v != 2 {
		t.Errorf("explained %v, want 2", v)
	}
	m := f["rtscope_slo_violations_not_analysed_total"].Metric[0]
	reason := ""
	for _, l := range m.Label {
		if l.GetName() == "reason" {
			reason = l.GetValue()
		}
	}
	if m.Counter.GetValue() != 1 || reason != "budget" {
		t.Errorf("not analysed: %v", m)
	}
}

func TestConfigErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"targets:\n  - comm: ctl\n  - pid: 1\n    tid: 2\n", "line 3: a target has exactly one of comm, pid or tid"},
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

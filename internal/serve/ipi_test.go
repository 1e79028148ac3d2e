package serve

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/rtscope/rtscope/internal/engine"
)

// value is the counter of family name whose labels include want (nil: none).
func value(f *dto.MetricFamily, want map[string]string) *float64 {
	for _, m := range f.GetMetric() {
		n := 0
		for _, l := range m.GetLabel() {
			if w, ok := want[l.GetName()]; ok && w == l.GetValue() {
				n++
			}
		}
		if n == len(want) {
			v := m.GetCounter().GetValue()
			return &v
		}
	}
	return nil
}

// /metrics counts IPIs per CPU and kind, and per target by kind: the IPIs
// its tasks received, which stay in its total after the task exits.
func TestIPIMetrics(t *testing.T) {
	x := NewExporter()
	ctl := task(1, "ctl", 1000)
	ctl.Tid = 501
	st := engine.IPIStats{CPUs: []engine.IPICPU{{CPU: 1}}, Pairs: []engine.IPIPair{
		{Receiver: 501, Sender: 900, CPU: 1, Kind: engine.IPITLB, Count: 40},
		{Receiver: 501, Sender: 901, CPU: 1, Kind: engine.IPITLB, Count: 2},
		{Receiver: 0, Sender: 900, CPU: 1, Kind: engine.IPITLB, Count: 7},
	}}
	st.CPUs[0].Count[engine.IPITLB], st.CPUs[0].Ns[engine.IPITLB] = 49, 98000
	x.mu.Lock()
	x.setLive([]*engine.TaskStats{ctl})
	x.tickIPIs(st, true)
	x.mu.Unlock()
	check := func(when string) {
		f := gather(t, x)
		if v := value(f["rtscope_cpu_ipis_received_total"], map[string]string{"cpu": "1", "kind": "tlb_shootdown"}); v == nil || *v != 49 {
			t.Errorf("%s: CPU 1 TLB shootdowns %v, want 49", when, v)
		}
		if v := value(f["rtscope_cpu_ipi_handler_seconds_total"], map[string]string{"cpu": "1", "kind": "tlb_shootdown"}); v == nil || *v != 98e-6 {
			t.Errorf("%s: CPU 1 TLB handler time %v, want 98e-6 s", when, v)
		}
		if v := value(f["rtscope_ipis_received_total"], map[string]string{"target": "ctl", "kind": "tlb_shootdown"}); v == nil || *v != 42 {
			t.Errorf("%s: ctl's TLB shootdowns %v, want 42", when, v)
		}
	}
	check("live")
	x.Exit(ctl)
	x.mu.Lock()
	x.setLive(nil)
	x.tickIPIs(st, true)
	x.mu.Unlock()
	check("after its exit")
	x.mu.Lock()
	x.tickIPIs(engine.IPIStats{}, false)
	x.mu.Unlock()
	if f := gather(t, x); f["rtscope_cpu_ipis_received_total"] != nil {
		t.Error("IPI metrics without --ipi")
	}
}

package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/trace"
)

// IPIs on /metrics (serve --ipi, docs/ipi.md): received per CPU and kind,
// and per target (while one of its tasks ran or waited on the CPU).

// ipiExport is the exporter's IPI state: the engine's counts at the last
// Tick, and the label of every receiving task seen, kept after it exits
// so that its target's counter never goes down while the kernel's pair
// table still holds its counts.
type ipiExport struct {
	on       bool
	st       engine.IPIStats
	tidLabel map[uint32]string
	cpu      *prometheus.Desc
	cpuNs    *prometheus.Desc
	target   *prometheus.Desc
}

func newIPIExport() ipiExport {
	return ipiExport{tidLabel: map[uint32]string{},
		cpu: prometheus.NewDesc("rtscope_cpu_ipis_received_total",
			"IPIs a CPU received, by kind (tlb_shootdown, function_call, reschedule, irq_work, remote_wakeup); serve --ipi.",
			[]string{"cpu", "kind"}, nil),
		cpuNs: prometheus.NewDesc("rtscope_cpu_ipi_handler_seconds_total", "Time a CPU spent in IPI handlers, by kind; serve --ipi.",
			[]string{"cpu", "kind"}, nil),
		target: prometheus.NewDesc("rtscope_ipis_received_total",
			"IPIs received on their CPU while a task of the target ran or waited there, by kind; serve --ipi.",
			[]string{"target", "unit", "pod", "kind"}, nil)}
}

// tickIPIs reads the engine's IPI counts (nothing without --ipi) and the
// labels of the live tasks that received some. Called with mu held.
func (x *Exporter) tickIPIs(st engine.IPIStats, ok bool) {
	x.ipi.on = ok
	if !ok {
		return
	}
	x.ipi.st = st
	byTID := map[uint32]*engine.TaskStats{}
	for _, s := range x.live {
		byTID[s.Tid] = s
	}
	for _, p := range st.Pairs {
		if _, known := x.ipi.tidLabel[p.Receiver]; known || p.Receiver == 0 {
			continue
		}
		if s := byTID[p.Receiver]; s != nil {
			x.ipi.tidLabel[p.Receiver] = x.labelOf(s)
		}
	}
}

// collectIPIs writes the IPI counters. Called with mu held.
func (x *Exporter) collectIPIs(ch chan<- prometheus.Metric) {
	if !x.ipi.on {
		return
	}
	counter := func(desc *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, lv...)
	}
	for _, c := range x.ipi.st.CPUs {
		cpu := strconv.Itoa(c.CPU)
		for k := range engine.IPIKinds {
			kind := trace.IPIKindOf(uint8(k)).String()
			counter(x.ipi.cpu, float64(c.Count[k]), cpu, kind)
			counter(x.ipi.cpuNs, float64(c.Ns[k])/1e9, cpu, kind)
		}
	}
	type tk struct{ label, kind string }
	by := map[tk]uint64{}
	for _, p := range x.ipi.st.Pairs {
		if l, ok := x.ipi.tidLabel[p.Receiver]; ok {
			by[tk{l, trace.IPIKindOf(p.Kind).String()}] += p.Count
		}
	}
	for k, v := range by {
		counter(x.ipi.target, float64(v), append(seriesLabels(k.label), k.kind)...)
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
)

// TestVocabulary checks the Go names of the kernel's metrics and hygiene
// counters against the C enums of the BPF object (its BTF): a metric or a
// counter added in bpf/rtscope.h without its Go name fails here.
func TestVocabulary(t *testing.T) {
	metrics, err := engine.CEnum("rts_metric")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := metrics["RTS_M_COUNT"]; !ok || int(n) != int(metric.Count) || len(metrics) != int(metric.Count)+1 {
		t.Errorf("rts_metric has %d metrics (RTS_M_COUNT %d), metric.Count is %d", len(metrics)-1, n, metric.Count)
	}
	for c, v := range metrics {
		if c == "RTS_M_COUNT" {
			continue
		}
		// RTS_M_TIMER_IRQ is "timer-irq".
		want := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(c, "RTS_M_")), "_", "-")
		if got := metric.ID(v).String(); got != want {
			t.Errorf("%s = %d is %q in Go, want %q", c, v, got, want)
		}
	}

	hygiene, err := engine.CEnum("rts_hygiene")
	if err != nil {
		t.Fatal(err)
	}
	// The kernel's counters come first in HygieneNames; the analysis adds
	// its own after them.
	names := map[string]string{
		"RTS_H_REL_TIMER":        "relative_timer_sleeps",
		"RTS_H_REALTIME_CLOCK":   "realtime_clock_sleeps",
		"RTS_H_LOWER_PRIO_WAKER": "woken_by_lower_priority",
		"RTS_H_MIGRATION":        "migrations",
		"RTS_H_MINOR_FAULTS":     "minor_page_faults",
		"RTS_H_MAJOR_FAULTS":     "major_page_faults",
		"RTS_H_MEM_NOT_LOCKED":   "memory_not_locked",
	}
	if int(hygiene["RTS_H_COUNT"]) != engine.HygieneCount || len(hygiene) != len(names)+1 {
		t.Errorf("rts_hygiene: %v; want the %d counters named here", hygiene, len(names))
	}
	for c, v := range hygiene {
		if c == "RTS_H_COUNT" {
			continue
		}
		if int(v) >= len(HygieneNames) || HygieneNames[v] != names[c] {
			t.Errorf("%s = %d: HygieneNames has %q, want %q", c, v, HygieneNames[min(int(v), len(HygieneNames)-1)], names[c])
		}
	}
}

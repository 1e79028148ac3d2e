package main

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

const interruptsSample = `            CPU0       CPU1       
   0:         44          0   IO-APIC    2-edge      timer
 NMI:          0          0   Non-maskable interrupts
 LOC:    2264911    2262474   Local timer interrupts
 RES:     986521    1079922   Rescheduling interrupts
 CAL:   11388530   13326398   Function call interrupts
 TLB:    1338068    5267747   TLB shootdowns
`

// The IPI phase reads CPU 1's CAL column of /proc/interrupts.
func TestParseInterrupts(t *testing.T) {
	for _, c := range []struct {
		row  string
		cpu  int
		want uint64
	}{{"CAL", 1, 13326398}, {"CAL", 0, 11388530}, {"TLB", 1, 5267747}, {"RES", 0, 986521}} {
		got, err := parseInterrupts([]byte(interruptsSample), c.row, c.cpu)
		if err != nil || got != c.want {
			t.Errorf("%s CPU%d: %d, %v; want %d", c.row, c.cpu, got, err, c.want)
		}
	}
	if _, err := parseInterrupts([]byte(interruptsSample), "CAL", 2); err == nil {
		t.Error("CPU2: no error for a column that is not there")
	}
	if _, err := parseInterrupts([]byte(interruptsSample), "IPI0", 1); err == nil {
		t.Error("IPI0: no error for a row that is not there")
	}
}

// The load's rate is its last "ops N seconds S" line, its slices' 90th
// percentile the "slice-p90 R" line before it.
func TestParseIPILoad(t *testing.T) {
	got, err := parseIPILoad([]byte("warming up\nslice-p90 1200000\ncpu-seconds 4.0\nops 2096816 seconds 2.000\n"))
	if err != nil || got != (ipiLoadResult{OpsPerS: 1048408, SliceP90: 1200000, OpsPerCPUS: 524204}) {
		t.Errorf("%+v, %v; want 1048408 ops/s, p90 1200000, 524204 per CPU second", got, err)
	}
	if _, err := parseIPILoad([]byte("ops 5 seconds 0\n")); err == nil {
		t.Error("no error for a run of 0 seconds")
	}
	if _, err := parseIPILoad([]byte("killed\n")); err == nil {
		t.Error("no error without the ops line")
	}
}

// The IPIs received are CAL summed over the header's CPUs.
func TestSumInterrupts(t *testing.T) {
	got, err := sumInterrupts([]byte(interruptsSample), "CAL")
	if err != nil || got != 11388530+13326398 {
		t.Errorf("%d, %v; want %d", got, err, 11388530+13326398)
	}
	if _, err := sumInterrupts([]byte("nothing\n CAL: 1 2\n"), "CAL"); err == nil {
		t.Error("no error without CPU columns")
	}
}

// The slices' rate is the nearest rank below the quantile.
func TestPercentile(t *testing.T) {
	v := []float64{50, 10, 40, 20, 30, 60, 70, 80, 90, 100}
	if got := percentile(v, 0.9); got != 90 {
		t.Errorf("p90 %v; want 90 (the 9th of 10, nearest rank below)", got)
	}
	if got := percentile(v, 0); got != 10 {
		t.Errorf("p0 %v; want 10", got)
	}
	if percentile(nil, 0.9) != 0 {
		t.Error("p90 of no slices is not 0")
	}
	if v[0] != 50 {
		t.Error("percentile sorted its argument")
	}
}

// The load process runs each mode and counts its ops: every load sends
// and counts (root: perf_event_open on a CPU, membarrier; 2 CPUs).
func TestIPILoadModes(t *testing.T) {
	if os.Geteuid() != 0 || runtime.NumCPU() < 2 {
		t.Fatal("needs root and 2 CPUs, as the ipi phase")
	}
	for _, mode := range ipiLoads {
		l := &ipiLoadRun{}
		var err error
		if mode == "perfcall" {
			err = l.startPerfCall()
		} else {
			err = l.startOneWay(mode)
		}
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		ops, secs, p90, cpu := l.sample(100 * time.Millisecond)
		l.stop.Store(true)
		l.wg.Wait()
		if ops <= 0 || secs < 0.1 || p90 <= 0 {
			t.Errorf("%s: %d ops in %.3f s, p90 %.0f/s: want ops counted", mode, ops, secs, p90)
		}
		// The senders' CPU clocks ran, at most as long as the window on each.
		senders := 1.0
		if mode == "perfcall" {
			senders = 2
		}
		if cpu <= 0 || cpu > senders*1.5*secs {
			t.Errorf("%s: senders on their CPUs %.3f s of a %.3f s window", mode, cpu, secs)
		}
	}
}

// Only the IPI hooks are in the per-program IPI table.
func TestIPIProgram(t *testing.T) {
	for name, want := range map[string]bool{"on_csd_queue_cpu": true, "on_ipi_send_cpu": true, "on_ipi_call_function_entry": true,
		"on_ipi_entry": true, "on_sched_switch": false, "on_irq_entry": false} {
		if ipiProgram(name) != want {
			t.Errorf("ipiProgram(%q) = %v", name, !want)
		}
	}
}

// The per-IPI table splits the hooks into the sender's and the receiver's,
// and counts a receipt once (at its entry).
func TestIPISplit(t *testing.T) {
	progs := map[string]*ProgStat{
		"a": {Name: "on_csd_queue_cpu", Runtime: 4000, Count: 10},
		"b": {Name: "on_ipi_send_cpu", Runtime: 1000, Count: 12},
		"c": {Name: "on_ipi_call_function_single_entry", Runtime: 2500, Count: 10},
		"d": {Name: "on_ipi_call_function_single_exit", Runtime: 2000, Count: 10},
		"e": {Name: "on_ipi_entry", Runtime: 300, Count: 2},
		"f": {Name: "on_ipi_exit", Runtime: 200, Count: 2},
		"g": {Name: "on_sched_switch", Runtime: 9999, Count: 99},
	}
	send, recv, n := ipiSplit(progs)
	if send != 5000 || recv != 5000 || n != 12 {
		t.Errorf("send %d, receive %d ns over %d receipts; want 5000, 5000 over 12", send, recv, n)
	}
}

// The IPI table gives each configuration's ops/s, slices' p90 and ops per
// CPU second against no monitor under the same load, and "-" without one.
func TestIPIMarkdownRatios(t *testing.T) {
	r := &results{IPILoad: 3 * time.Second, IPI: []*ipiRow{
		{Load: "perfcall", Name: "no monitor", OpsPerS: []float64{100e3, 120e3, 80e3}, SliceP90: []float64{150e3},
			OpsPerCPUS: []float64{80e3}, IPIPerS: []float64{100e3}},
		{Load: "perfcall", Name: "rtscope watch --ipi", OpsPerS: []float64{90e3}, SliceP90: []float64{120e3},
			OpsPerCPUS: []float64{76e3}, IPIPerS: []float64{90e3}, BPFNsPerIPI: []float64{950}},
		{Load: "mprotect", Name: "rtscope isolation -c 1", OpsPerS: []float64{50e3}},
	}}
	var w strings.Builder
	r.ipiMarkdown(&w)
	out := w.String()
	for _, want := range []string{
		"| perfcall | rtscope watch --ipi | 90k | 0.90x | 120k | 0.80x | 76k | 0.95x | 90k | - | 950 ns |",
		"| mprotect | rtscope isolation -c 1 | 50k | - | - | - | - | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q in:\n%s", want, out)
		}
	}
}

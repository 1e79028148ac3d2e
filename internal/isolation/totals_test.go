package isolation

import (
	"os"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Totals folds senders and tasks into one row per CPU and cause: a
// synthetic snapshot's rows, summed by hand.
func TestTotalsByCPUAndCause(t *testing.T) {
	s := &Snapshot{CPUs: []int{1, 3}, Online: []int{0, 1, 2, 3}, Allow: []string{"control"},
		IPIs: []IPIRow{
			{CPU: 1, Kind: "TLB shootdown", SenderTID: 10, Comm: "a", Time: Time{Count: 5, Ns: 500, MaxNs: 200}},
			{CPU: 1, Kind: "TLB shootdown", SenderTID: 11, Comm: "b", Time: Time{Count: 2, Ns: 40, MaxNs: 30}},
			{CPU: 1, Kind: "function call", SenderCPU: -1, Time: Time{Count: 3}}, // no send seen: counted, no time
			{CPU: 3, Kind: "reschedule", SenderTID: 12, Comm: "c", Time: Time{Count: 1, Ns: 7, MaxNs: 7}},
		},
		IRQs:     []IRQRow{{CPU: 3, IRQ: 24, Name: "eth0", Time: Time{Count: 4, Ns: 4000, MaxNs: 1500}}},
		Softirqs: []SoftirqRow{{CPU: 1, Vector: "RCU", Raised: 9, Time: Time{Count: 6, Ns: 600}}, {CPU: 1, Vector: "NET_RX", Raised: 2}},
		Works:    []WorkRow{{CPU: 1, Func: "vmstat_update", Time: Time{Count: 2, Ns: 80}}},
		Tasks: []TaskRow{
			{CPU: 1, TID: 100, PID: 100, Comm: "control", Time: Time{Count: 50, Ns: 9e8}},                     // the workload: not counted
			{CPU: 1, TID: 200, PID: 200, Comm: "make", Time: Time{Count: 3, Ns: 3000}},                        // a user task
			{CPU: 1, TID: 201, PID: 200, Comm: "make", Time: Time{Count: 1, Ns: 1000}},                        // its other thread
			{CPU: 1, TID: 20, Comm: "ksoftirqd/1", Kthread: true, PerCPU: true, Time: Time{Count: 2, Ns: 20}}, // a per-CPU kthread
		},
	}
	got := Totals(Analyze(s))
	want := []CauseTotal{
		{1, CauseIPI, 10, 540}, {1, CauseIRQ, 0, 0}, {1, CauseSoftirq, 6, 600}, {1, CauseWork, 2, 80}, {1, CauseTimer, 0, 0}, {1, CauseTask, 6, 4020},
		{3, CauseIPI, 1, 7}, {3, CauseIRQ, 4, 4000}, {3, CauseSoftirq, 0, 0}, {3, CauseWork, 0, 0}, {3, CauseTimer, 0, 0}, {3, CauseTask, 0, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("totals:\n got %v\nwant %v", got, want)
	}
}

// A cause Totals does not know (added to Analyze later) gets its rows
// after the known ones, by name; a CPU with no intrusion has its zeros.
func TestTotalsOtherCause(t *testing.T) {
	r := &Result{CPUs: []CPUResult{{CPU: 2, Intrusions: []Intrusion{
		{Cause: "zeta", Time: Time{Count: 1, Ns: 2}}, {Cause: "alpha", Time: Time{Count: 3, Ns: 4}}, {Cause: "alpha", Time: Time{Count: 1, Ns: 1}},
	}}}}
	got := Totals(r)
	if len(got) != len(Causes)+2 || got[len(Causes)] != (CauseTotal{2, "alpha", 4, 5}) || got[len(Causes)+1] != (CauseTotal{2, "zeta", 1, 2}) {
		t.Errorf("totals: %v", got)
	}
	for _, c := range got[:len(Causes)] {
		if c.Count != 0 || c.Ns != 0 {
			t.Errorf("%s: %v, want zero", c.Cause, c)
		}
	}
}

// The recorded run's totals are its intrusions summed by cause.
func TestTotalsFixture(t *testing.T) {
	res := Analyze(loadFixture(t))
	want := map[CauseTotal]bool{}
	sums := map[[2]any]*CauseTotal{}
	for _, c := range res.CPUs {
		for _, in := range c.Intrusions {
			k := [2]any{c.CPU, in.Cause}
			if sums[k] == nil {
				sums[k] = &CauseTotal{CPU: c.CPU, Cause: in.Cause}
			}
			sums[k].Count += in.Count
			sums[k].Ns += in.Ns
		}
	}
	for _, v := range sums {
		want[*v] = true
	}
	nonzero := 0
	for _, c := range Totals(res) {
		if c.Count == 0 && c.Ns == 0 {
			continue
		}
		nonzero++
		if !want[c] {
			t.Errorf("%v: not a sum of the intrusions", c)
		}
	}
	if nonzero != len(want) || nonzero < 3 {
		t.Errorf("%d non-zero totals, %d sums of intrusions", nonzero, len(want))
	}
}

// A Session read while it runs counts more at each read: serve reads it
// every tick. An mprotect loop on CPU 0 sends a reader of the page on CPU
// 1 TLB shootdowns; three reads 500 ms apart see the IPI total grow.
func TestSessionSnapshotsGrow(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF programs (CI runs as root)")
	}
	page := sharedPage(t)
	var stop atomic.Bool
	var sink atomic.Uint32
	pinned(t, 1, &stop, func() { sink.Add(uint32(page[0])) })
	pinned(t, 0, &stop, func() {
		_ = unix.Mprotect(page, unix.PROT_READ)
		_ = unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE)
	})
	ss, err := Start(Options{CPUs: []int{1}, OwnIPIs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var last uint64
	for i := range 3 {
		time.Sleep(500 * time.Millisecond)
		snap, err := ss.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var ipis uint64
		for _, c := range Totals(Analyze(snap)) {
			if c.Cause == CauseIPI {
				ipis += c.Count
			}
		}
		t.Logf("read %d after %.1f s: %d IPIs on CPU 1", i, float64(snap.DurationNs)/1e9, ipis)
		if ipis <= last {
			t.Errorf("read %d: %d IPIs, not more than %d before", i, ipis, last)
		}
		last = ipis
	}
}

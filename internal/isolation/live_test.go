package isolation

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/workload"
)

var record = flag.Bool("record", false, "write the live run's snapshot to testdata/run.json (the fixture of TestReportGolden)")

// pinned runs fn on a thread of its own pinned to cpu, until stop; it
// returns the thread's tid once it runs. The test's cleanup stops the
// thread and waits for it: fn may touch memory that a cleanup registered
// before frees (a page unmapped under a running reader faulted).
func pinned(t *testing.T, cpu int, stop *atomic.Bool, fn func()) uint32 {
	t.Helper()
	tid := make(chan int)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.Error(err)
		}
		tid <- unix.Gettid()
		for !stop.Load() {
			fn()
		}
	}()
	t.Cleanup(func() {
		stop.Store(true)
		<-done
	})
	return uint32(<-tid)
}

// sharedPage maps a page, unmapped at the test's end (after the pinned
// threads registered later have stopped).
func sharedPage(t *testing.T) []byte {
	t.Helper()
	page, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(page) })
	page[0] = 1
	return page
}

// watchIntruder watches CPU 1 for 3 s with engine kind: the
// call-function IPIs /proc/interrupts counted there while the hooks were
// attached, and those attributed to the intruder.
func watchIntruder(t *testing.T, kind string, intruder uint32) (snap *Snapshot, seen, mine uint64) {
	t.Helper()
	var before, after uint64
	snap, err := Collect(context.Background(), Options{CPUs: []int{1}, Duration: 3 * time.Second, OwnIPIs: true, Engine: kind,
		Ready: func() { before = procCallIPIs(t, 1) }, Ending: func() { after = procCallIPIs(t, 1) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.IPIs {
		if r.CPU == 1 && r.SenderTID == intruder && (r.Kind == "TLB shootdown" || r.Kind == "function call") {
			mine += r.Count
		}
	}
	return snap, after - before, mine
}

// A thread on CPU 0 write-protects a page that a thread of the same
// process on CPU 1 keeps reading: every protection change sends CPU 1 a
// TLB shootdown. Of the call-function IPIs /proc/interrupts counts on
// CPU 1 while the hooks are attached, 90% at least are attributed to the
// intruder, over thousands.
func TestLiveIPIAttribution(t *testing.T) {
	snap := liveAttribution(t, engine.EngineBTF)
	if *record {
		b, err := json.MarshalIndent(snap, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/run.json", append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The same with the classic engine (isolation_classic.bpf.c): its stubs
// feed the same bodies, and attribute as much; its report says it ran.
func TestLiveIPIAttributionClassic(t *testing.T) {
	snap := liveAttribution(t, engine.EngineClassic)
	if snap.Engine != engine.EngineClassic || len(snap.EngineLimits) == 0 {
		t.Errorf("engine %q limits %v, want classic and its limits", snap.Engine, snap.EngineLimits)
	}
	if len(snap.Missing) > 0 {
		t.Errorf("tracepoints missing on this kernel: %v", snap.Missing)
	}
}

// liveAttribution runs the intruder and a reader on CPU 1 and checks the
// attribution with engine kind; it returns the run's snapshot.
func liveAttribution(t *testing.T, kind string) *Snapshot {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF programs (CI runs as root)")
	}
	page := sharedPage(t)
	var stop atomic.Bool
	var sink atomic.Uint32
	pinned(t, 1, &stop, func() { sink.Add(uint32(page[0])) })
	intruder := pinned(t, 0, &stop, func() {
		_ = unix.Mprotect(page, unix.PROT_READ)
		_ = unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE)
	})
	// Twice if the machine's other load kept the threads from making
	// 1000 shootdowns: the share is judged over many events only.
	var snap *Snapshot
	for attempt := 1; ; attempt++ {
		var seen, mine uint64
		snap, seen, mine = watchIntruder(t, kind, intruder)
		t.Logf("%s engine, CPU 1: /proc/interrupts CAL +%d, %d attributed to the intruder (tid %d)", kind, seen, mine, intruder)
		if seen < 1000 && attempt == 1 {
			continue
		}
		if seen < 1000 || mine*10 < seen*9 {
			t.Errorf("%d of %d call-function IPIs on CPU 1 attributed to the intruder; want 90%% of 1000 at least", mine, seen)
		}
		break
	}
	stop.Store(true)
	res := Analyze(snap)
	if len(res.CPUs) != 1 || res.CPUs[0].Worst == nil {
		t.Fatalf("no intrusion judged on CPU 1: %+v", res)
	}
	return snap
}

// procCallIPIs is workload.CallIPIs, failing t on an error.
func procCallIPIs(t *testing.T, cpu int) uint64 {
	t.Helper()
	n, err := workload.CallIPIs(cpu)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

package engine

import (
	"errors"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// shootdowns runs, for d, a busy thread on CPU victim (so that its CPU
// runs this process's mm: a lazy-TLB CPU would be skipped) and a thread
// on CPU from that write-protects and unprotects a page of the process in
// a loop: each protection change flushes the page from every CPU that
// runs the mm, by IPI. It returns the intruder's tid and its iterations.
func shootdowns(t *testing.T, from, victim int, d time.Duration) (uint32, int) {
	t.Helper()
	page, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(page) //nolint:errcheck // test memory
	var stop atomic.Bool
	var wg sync.WaitGroup
	var tid atomic.Uint32
	iters := 0
	pin := func(cpu int) {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		_ = unix.SchedSetaffinity(0, &set)
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		pin(victim)
		defer runtime.UnlockOSThread()
		var sink byte
		for !stop.Load() {
			sink += page[64] // this CPU uses the mm (and reads the page: it may be read-only)
		}
		_ = sink
	}()
	go func() {
		defer wg.Done()
		pin(from)
		defer runtime.UnlockOSThread()
		tid.Store(uint32(unix.Gettid()))
		for !stop.Load() {
			page[0] = 1
			_ = unix.Mprotect(page, unix.PROT_READ)
			_ = unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE)
			iters++
			time.Sleep(50 * time.Microsecond) // leave the shared CPUs some room
		}
	}()
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return tid.Load(), iters
}

// With --ipi, the TLB shootdowns an mprotect loop sends to a CPU where
// another thread of its process runs are received there, counted by kind,
// and attributed to the loop's thread with flush_tlb_func as their work;
// over many IPIs, not one.
func TestIPIShootdownsAttributed(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Fatal("needs 2 CPUs")
	}
	for _, kind := range []string{EngineBTF, EngineClassic} {
		t.Run(kind, func(t *testing.T) {
			e, err := Load(Config{Trace: true, FlightPerCPU: 1024, Engine: kind, IPI: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if err := e.Attach(); err != nil {
				t.Fatal(err)
			}
			for _, f := range []Feature{FeatureIPISend, FeatureIPIReceive} {
				if !e.Features.Has(f) {
					t.Fatalf("%s: %v", f, e.Features.Missing(f))
				}
			}
			intruder, iters := shootdowns(t, 0, 1, 2*time.Second)
			st, err := e.IPIs()
			if err != nil {
				t.Fatal(err)
			}
			var mine, tlb1 uint64
			sort.Slice(st.Pairs, func(i, j int) bool { return st.Pairs[i].Count > st.Pairs[j].Count })
			for _, p := range st.Pairs[:min(6, len(st.Pairs))] {
				t.Logf("  %6d x %d on CPU %d from %s/%d (pid %d) on CPU %d, receiver %d", p.Count, p.Kind, p.CPU, p.Comm, p.Sender, p.SenderPID, p.SenderCPU, p.Receiver)
			}
			for _, p := range st.Pairs {
				if p.CPU == 1 && p.Kind == IPITLB {
					tlb1 += p.Count
					if p.Sender == intruder {
						mine += p.Count
					}
				}
			}
			t.Logf("%d mprotect pairs; CPU 1: %d TLB shootdowns received, %d from the intruder; CPU 1 counts %v",
				iters, tlb1, mine, st.CPUs[1].Count)
			// Other threads of this process (the Go runtime's) send their
			// own, and a loaded machine runs other work on CPU 1 (no IPI
			// then): the intruder's count is bounded by its iterations (a
			// pair flushes at most twice) and at least a few dozen; every
			// receipt has a sender (a send seen for it).
			if mine < 50 || mine > 2*uint64(iters)+10 {
				t.Errorf("%d TLB shootdowns on CPU 1 attributed to the intruder %d for its %d mprotect pairs; want 50 to twice the pairs",
					mine, intruder, iters)
			}
			if un := st.CPUs[1].Unattributed[IPITLB]; un*10 > st.CPUs[1].Count[IPITLB] {
				t.Errorf("%d of CPU 1's %d TLB shootdowns have no sender; want at most 10%%", un, st.CPUs[1].Count[IPITLB])
			}
			if st.CPUs[1].Count[IPITLB] < tlb1 {
				t.Errorf("CPU 1 counts %d TLB shootdowns, fewer than its pairs' %d", st.CPUs[1].Count[IPITLB], tlb1)
			}
		})
	}
}

// Without --ipi the senders are not attached, and the features say why;
// the receipts are (noise parts), their counts are not kept.
func TestIPINotAsked(t *testing.T) {
	e, err := Load(Config{Trace: true, FlightPerCPU: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Attach(); err != nil {
		t.Fatal(err)
	}
	if e.Features.Has(FeatureIPISend) || e.Features.Sentence(FeatureIPISend) != errIPINotAsked.Error() {
		t.Errorf("without --ipi: senders attached %v, sentence %q", e.Features.Has(FeatureIPISend), e.Features.Sentence(FeatureIPISend))
	}
	if !e.Features.IPIReceipts() || e.Features.IPIAsked() {
		t.Errorf("without --ipi: receipts %v (want attached, for noise), asked %v", e.Features.IPIReceipts(), e.Features.IPIAsked())
	}
	if _, err := e.IPIs(); err != ErrNoIPI {
		t.Errorf("IPIs without --ipi: %v, want ErrNoIPI", err)
	}
}

// IPISendersUnseen names why sends are not recorded: --ipi not given, or
// a kernel without the send tracepoints; "" when they are recorded.
func TestIPISendersUnseen(t *testing.T) {
	var f Features
	f.set(FeatureKernelBTF, nil)
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errIPINotAsked, "watch --ipi names it"},
		{errors.New("tracepoint csd/csd_queue_cpu: not found"), "this kernel has no csd:csd_queue_cpu/ipi:ipi_send_cpu tracepoints, Linux 6.3 or later"},
	} {
		f.set(FeatureIPISend, c.err)
		if got := f.IPISendersUnseen(); got != c.want {
			t.Errorf("ipi_send %v: %q, want %q", c.err, got, c.want)
		}
	}
}

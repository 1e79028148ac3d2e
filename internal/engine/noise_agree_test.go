package engine

// The noise metric against a busy loop that measures its own gaps: a child
// process (this test binary, in loop mode) spins on one CPU reading
// CLOCK_MONOTONIC, the clock BPF stamps events with, and writes every gap
// longer than noiseLoopMin with its start and end; the engine's noise
// intervals of that thread (its flight events) must cover each of them.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

const (
	noiseLoopEnv  = "RTSCOPE_NOISE_LOOP_OUT"
	noiseLoopName = "noise-loop"
	noiseLoopMin  = 100_000 // ns: the gaps compared
	noiseLoopRun  = 4 * time.Second
)

// noiseStallHead: a gap whose first seen part came this long after the
// loop stopped began with a stall of the whole vCPU (the tick, every 4 ms
// at HZ=250 and every 1 ms here, would have been seen): unseen, not a
// disagreement (six 20-38 ms gaps began with 10 ms that showed nothing).
const noiseStallHead = 4_000_000

// noiseGap is one gap of the loop, CLOCK_MONOTONIC ns.
type noiseGap struct {
	Start, End int64
	causes     uint16 // the interval's (1 << cause)
	top        uint8
}

// noiseLoopOut is what the loop child writes: its thread and its gaps.
type noiseLoopOut struct {
	TID  uint32
	Gaps []noiseGap
}

// noiseKey is a noise interval's key: its task and start.
type noiseKey struct {
	tid   uint32
	start uint64
}

// TestMain runs the test binary as TestNoiseAgreesWithLoop's loop when
// noiseLoopEnv is set, as TestNoiseIPIsOfLoop's when noiseIPIEnv is (a
// child process, not a test that skips).
func TestMain(m *testing.M) {
	if out := os.Getenv(noiseIPIEnv); out != "" {
		if err := noiseIPIChild(out); err != nil {
			fmt.Fprintln(os.Stderr, "noise IPI loop:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if out := os.Getenv(noiseLoopEnv); out != "" {
		if err := noiseLoopChild(out); err != nil {
			fmt.Fprintln(os.Stderr, "noise loop:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// noiseLoopChild is the loop: pinned to the last CPU, named noiseLoopName,
// it spins for noiseLoopRun and writes the gaps it saw to out.
func noiseLoopChild(out string) error {
	runtime.LockOSThread()
	cpu := runtime.NumCPU() - 1
	if err := workload.Pin(0, cpu); err != nil {
		return err
	}
	if err := workload.SetName(noiseLoopName); err != nil {
		return err
	}
	// A polling thread runs real-time: only interrupts, throttling, the
	// hypervisor and higher priorities take its CPU.
	if err := workload.SetScheduler(0, workload.FIFO, 1); err != nil {
		return err
	}
	time.Sleep(50 * time.Millisecond) // tracked at its rename: let the engine see it
	stop := make(chan struct{})
	defer close(stop)
	go noiseInjector(cpu, stop)
	gaps := make([]noiseGap, 0, 100_000)
	prev := workload.Now()
	end := prev + int64(noiseLoopRun)
	for prev < end {
		now := workload.Now()
		if now-prev > noiseLoopMin && len(gaps) < cap(gaps) {
			gaps = append(gaps, noiseGap{Start: prev, End: now})
		}
		prev = now
	}
	b, _ := json.Marshal(noiseLoopOut{uint32(unix.Gettid()), gaps})
	return os.WriteFile(out, b, 0o600)
}

// noiseInjector preempts the loop on its CPU every 20 ms for 200 us, at a
// higher FIFO priority, its own timer waking it there: gaps the engine
// sees whatever else the machine does. On a quiet VM the loop alone had
// 3-20 gaps over 100 us a run, short of the 50 the test judges over in 4
// runs.
func noiseInjector(cpu int, stop <-chan struct{}) {
	runtime.LockOSThread()
	if workload.Pin(0, cpu) != nil || workload.SetScheduler(0, workload.FIFO, 2) != nil {
		return
	}
	nap := unix.NsecToTimespec(int64(20 * time.Millisecond))
	for {
		select {
		case <-stop:
			return
		default:
		}
		_ = unix.Nanosleep(&nap, nil)
		for end := workload.Now() + 200_000; workload.Now() < end; {
		}
	}
}

// noiseIntervals collects the noise events from the rings every 10 ms,
// and the hard due times of the hard-IRQ timer callbacks (their expiry
// plus slack), until done (8192 events a CPU last far longer here). The
// rings are the live map memory BPF writes while they are read: an event
// is taken when two reads in a row agree on it (a torn read once paired
// an interval's start with a later one's end: 133 ms, in a run of the loop).
func noiseIntervals(e *Engine, done <-chan struct{}) (map[noiseKey]noiseGap, map[int64]bool) {
	got, due, prev := map[noiseKey]noiseGap{}, map[int64]bool{}, map[noiseKey]noiseGap{}
	take := func() {
		cur := map[noiseKey]noiseGap{}
		for cpu := range e.NumCPU() {
			for _, ev := range e.FlightRing(cpu) {
				switch ev.Type {
				case EventNoise:
					k := noiseKey{ev.A, EventX(&ev)}
					cur[k] = noiseGap{int64(EventX(&ev)), int64(EventY(&ev)), NoiseMask(&ev), NoiseTop(&ev)}
					if prev[k] == cur[k] {
						got[k] = cur[k]
					}
				case EventTimerEntry:
					if slack, ok := EventSlack(&ev); ok && ev.Flags&1 == 1 {
						due[int64(EventY(&ev)+slack)] = true
					}
				}
			}
		}
		prev = cur
	}
	for {
		select {
		case <-done:
			take()
			take()
			return got, due
		case <-time.After(10 * time.Millisecond):
			take()
		}
	}
}

// gapVerdicts counts the loop's gaps by how the noise intervals tell them.
type gapVerdicts struct {
	matched int // inside one interval whose length agrees within 10% + 20 us
	early   int // so, from the hard due time its interval began at: the vCPU left before the interrupt was due
	steal   int // its interval holds hypervisor steal, placed by a steal clock the tick reads
	unseen  int // no interval, or the first came noiseStallHead after it began
	missed  []string
}

// judged is the number of gaps the agreement is judged over.
func (v gapVerdicts) judged() int { return v.matched + v.early + len(v.missed) }

func (v *gapVerdicts) add(o gapVerdicts) {
	v.matched, v.early, v.steal, v.unseen = v.matched+o.matched, v.early+o.early, v.steal+o.steal, v.unseen+o.unseen
	v.missed = append(v.missed, o.missed...)
}

// Each gap of the loop over noiseLoopMin that rtscope saw is inside one
// noise interval of its thread whose length agrees within 10% + 20 us (or
// whose interval began at a hard IRQ's due time after the gap began, and
// ends with it: time before an interrupt was due is the hypervisor's, no
// guest code runs there); 85% of them at least (70% with the classic
// engine), over 50 gaps at least (a quiet CPU is run again, its gaps added
// up). Not judged, counted and logged: gaps no interval touches (SMIs,
// pauses of the whole VM have no hook, docs/noise.md) and gaps whose
// interval holds hypervisor steal (the steal clock is read at the tick: its
// part is placed before the reading, in one piece, while the hypervisor
// took it in several). A run where unseen gaps are more than three quarters
// (another job's IPI storm) is run again, the reason logged; 4 runs
// without enough gaps fail.
func TestNoiseAgreesWithLoop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	for _, kind := range []string{EngineBTF, EngineClassic} {
		t.Run(kind, func(t *testing.T) { agreesWithLoop(t, kind) })
	}
}

// agreesWithLoop is TestNoiseAgreesWithLoop on one engine: the classic one
// has no steal clock, and agrees less.
func agreesWithLoop(t *testing.T, kind string) {
	const enough = 50 // gaps to judge: a quiet CPU has a few a second
	var all gapVerdicts
	for attempt := 1; attempt <= 4 && all.judged() < enough; attempt++ {
		g, ivs, due := runNoiseLoop(t, kind)
		v := matchGaps(g, ivs, due)
		t.Logf("attempt %d: %d loop gaps > %d us, %d noise intervals; %d matched within 10%% + 20 us, %d so from their due time, %d with steal, %d with no interval",
			attempt, len(g), noiseLoopMin/1000, len(ivs), v.matched, v.early, v.steal, v.unseen)
		for _, s := range v.missed[:min(len(v.missed), 10)] {
			t.Logf("  unmatched: %s", s)
		}
		t.Logf("holes between intervals inside one loop gap (us): %v", holes(g, ivs))
		if v.unseen*4 > len(g)*3 {
			// Another job's IPI storm (the ipi-storm scenario, TLB
			// shootdowns) makes most gaps of a run such: not a run to judge.
			t.Logf("too noisy to judge: %d of %d gaps show no event at all (SMIs, a paused VM); run again", v.unseen, len(g))
			continue
		}
		all.add(v)
		if all.judged() < enough {
			t.Logf("%d gaps to judge so far: too quiet to judge, run again", all.judged())
		}
	}
	if all.judged() < enough {
		t.Fatalf("no run to judge: %d gaps to judge in 4 runs, too quiet or too noisy (logged above)", all.judged())
	}
	// 85%: an unseen IPI or VM exit just before a seen part makes a gap
	// longer than its interval.
	want := 85
	if kind == EngineClassic {
		want = 70
	}
	ok := all.matched + all.early
	t.Logf("%d of %d judged gaps agree (%d from their due time); not judged: %d with steal, %d with no interval (SMIs, a paused VM: no hook sees them)",
		ok, all.judged(), all.early, all.steal, all.unseen)
	if ok*100 < all.judged()*want {
		t.Errorf("%d of %d loop gaps that rtscope saw agree with a noise interval; want %d%%", ok, all.judged(), want)
	}
}

// runNoiseLoop runs the loop child under the engine and returns its gaps,
// its thread's noise intervals and the hard due times of timer callbacks.
func runNoiseLoop(t *testing.T, kind string) ([]noiseGap, []noiseGap, map[int64]bool) {
	e, err := Load(Config{Trace: true, FlightPerCPU: DefaultFlightPerCPU, Engine: kind})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.WantComm(noiseLoopName, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.Attach(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/gaps.json"
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), noiseLoopEnv+"="+out, "GODEBUG=asyncpreemptoff=1")
	cmd.Stderr = os.Stderr
	done := make(chan struct{})
	type result struct {
		ivs map[noiseKey]noiseGap
		due map[int64]bool
	}
	res := make(chan result)
	go func() { ivs, due := noiseIntervals(e, done); res <- result{ivs, due} }()
	err = cmd.Run()
	close(done)
	got := <-res
	if err != nil {
		t.Fatalf("loop child: %v", err)
	}
	var lo noiseLoopOut
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lo); err != nil {
		t.Fatal(err)
	}
	var ivs []noiseGap
	for k, iv := range got.ivs {
		if k.tid == lo.TID {
			ivs = append(ivs, iv)
		}
	}
	slices.SortFunc(ivs, func(a, b noiseGap) int { return int(a.Start - b.Start) })
	return lo.Gaps, ivs, got.due
}

// noiseStealBit is the steal cause's bit in an interval's causes.
const noiseStealBit = 1 << NoiseSteal

// agree: does a length d agree with the gap's n within 10% + 20 us?
func agree(d, n int64) bool { return abs64(d-n) <= n/10+20_000 }

// matchGaps tells each gap by the last interval (sorted) that overlaps it;
// due: the hard due times of timer callbacks.
func matchGaps(gaps, ivs []noiseGap, due map[int64]bool) (v gapVerdicts) {
	for _, g := range gaps {
		i, _ := slices.BinarySearchFunc(ivs, g.End, func(iv noiseGap, end int64) int { return int(iv.Start - end) })
		var near noiseGap
		for j := max(i-3, 0); j < min(i+1, len(ivs)); j++ {
			if iv := ivs[j]; iv.Start < g.End && iv.End > g.Start {
				near = iv
			}
		}
		n := g.End - g.Start
		switch {
		case near.End == 0 || near.Start-g.Start > noiseStallHead:
			v.unseen++ // nothing seen, or a stall of the vCPU before what was
		case agree(near.End-near.Start, n):
			v.matched++
		case near.causes&noiseStealBit != 0:
			v.steal++
		case due[near.Start] && near.Start > g.Start && agree(near.End-near.Start, g.End-near.Start):
			v.early++
		default:
			v.missed = append(v.missed, fmt.Sprintf("gap %d +%d us, interval %d +%d us (start %+d us, causes %#x, largest %d, due %v)", g.Start, n/1000,
				near.Start, (near.End-near.Start)/1000, (near.Start-g.Start)/1000, near.causes, near.top, due[near.Start]))
		}
	}
	return v
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// holes lists, in us, the spaces between consecutive intervals that fall
// inside one loop gap: time the loop did not run that no interval covers
// (what the merge gap, RTS_NOISE_MERGE_NS, must bridge).
func holes(gaps, ivs []noiseGap) []float64 {
	var out []float64
	for _, g := range gaps {
		var prevEnd int64
		for _, iv := range ivs {
			if iv.Start >= g.End || iv.End <= g.Start {
				continue
			}
			if prevEnd != 0 && iv.Start > prevEnd {
				out = append(out, float64(iv.Start-prevEnd)/1000)
			}
			prevEnd = iv.End
		}
	}
	slices.Sort(out)
	return out
}

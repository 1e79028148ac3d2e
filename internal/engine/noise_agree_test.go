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
	causes     uint8 // the interval's (1 << cause)
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
// noiseLoopEnv is set (a child process, not a test that skips).
func TestMain(m *testing.M) {
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

// noiseIntervals collects the noise events from the rings every 10 ms
// until done (8192 events a CPU last far longer here).
func noiseIntervals(e *Engine, done <-chan struct{}) map[noiseKey]noiseGap {
	got := map[noiseKey]noiseGap{}
	take := func() {
		for cpu := range e.NumCPU() {
			for _, ev := range e.FlightRing(cpu) {
				if ev.Type == EventNoise {
					got[noiseKey{ev.A, EventX(&ev)}] = noiseGap{int64(EventX(&ev)), int64(EventY(&ev)), ev.Flags, uint8(ev.C)}
				}
			}
		}
	}
	for {
		select {
		case <-done:
			take()
			return got
		case <-time.After(10 * time.Millisecond):
			take()
		}
	}
}

// Each gap of the loop over noiseLoopMin that rtscope saw (that a noise
// interval overlaps) is inside one noise interval of its thread whose
// length agrees within 10% + 20 us; 85% of them at least (70% with the
// classic engine), over 50 gaps at least (a quiet CPU is run again, its
// gaps added up). Gaps no interval touches are counted and logged: IPIs,
// NMIs and pauses of the whole VM have no hook (docs/noise.md); a run where
// they are more than three quarters of the gaps (another job's IPI storm)
// is run again, the reason logged; 4 runs without enough gaps fail.
func TestNoiseAgreesWithLoop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	for _, kind := range []string{EngineBTF, EngineClassic} {
		t.Run(kind, func(t *testing.T) { agreesWithLoop(t, kind) })
	}
}

// agreesWithLoop is TestNoiseAgreesWithLoop on one engine: the classic one
// has no timer expiry at a callback nor a steal clock, and agrees less.
func agreesWithLoop(t *testing.T, kind string) {
	const enough = 50 // gaps to judge: a quiet CPU has a few a second
	var gaps, matched, unseen int
	for attempt := 1; attempt <= 4 && gaps < enough; attempt++ {
		g, ivs := runNoiseLoop(t, kind)
		m, u, missed := matchGaps(g, ivs)
		t.Logf("attempt %d: %d loop gaps > %d us, %d noise intervals; %d matched within 10%% + 20 us, %d with no interval at all",
			attempt, len(g), noiseLoopMin/1000, len(ivs), m, u)
		for _, s := range missed[:min(len(missed), 10)] {
			t.Logf("  unmatched: %s", s)
		}
		t.Logf("holes between intervals inside one loop gap (us): %v", holes(g, ivs))
		if u*4 > len(g)*3 {
			// Another job's IPI storm (the ipi-storm scenario, TLB
			// shootdowns) makes most gaps of a run such: not a run to judge.
			// A quiet run of this VM has a third of them (33 of 92): the
			// share is judged over the gaps an interval touched.
			t.Logf("too noisy to judge: %d of %d gaps show no event at all (IPIs, NMIs, a paused VM); run again", u, len(g))
			continue
		}
		gaps, matched, unseen = gaps+len(g)-u, matched+m, unseen+u
		if gaps < enough {
			t.Logf("%d gaps over %d us so far: too quiet to judge, run again", gaps, noiseLoopMin/1000)
		}
	}
	if gaps < enough {
		t.Fatalf("no run to judge: %d gaps over %d us seen in 4 runs, too quiet or too noisy (logged above)", gaps, noiseLoopMin/1000)
	}
	// 85%: an unseen IPI or VM exit just before a seen part makes a gap
	// longer than its interval (98.9% of 1555 gaps on a calm run, 86% of
	// 50 in a run beside another job's IPIs).
	want := 85
	if kind == EngineClassic {
		want = 70
	}
	t.Logf("%d of %d seen gaps matched; %d gaps with no interval (IPIs, NMIs, a paused VM: no hook sees them)", matched, gaps, unseen)
	if matched*100 < gaps*want {
		t.Errorf("%d of %d loop gaps that rtscope saw matched by a noise interval; want %d%%", matched, gaps, want)
	}
}

// runNoiseLoop runs the loop child under the engine and returns its gaps
// and its thread's noise intervals.
func runNoiseLoop(t *testing.T, kind string) ([]noiseGap, []noiseGap) {
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
	res := make(chan map[noiseKey]noiseGap)
	go func() { res <- noiseIntervals(e, done) }()
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
	for k, iv := range got {
		if k.tid == lo.TID {
			ivs = append(ivs, iv)
		}
	}
	slices.SortFunc(ivs, func(a, b noiseGap) int { return int(a.Start - b.Start) })
	return lo.Gaps, ivs
}

// matchGaps counts the gaps inside one interval (sorted) of a length within
// 10% + 20 us of theirs, and those no interval overlaps or whose first
// interval came noiseStallHead after they began (unseen), and says the
// others.
func matchGaps(gaps, ivs []noiseGap) (matched, unseen int, missed []string) {
	for _, g := range gaps {
		i, _ := slices.BinarySearchFunc(ivs, g.End, func(iv noiseGap, end int64) int { return int(iv.Start - end) })
		ok := false
		var near noiseGap
		for j := max(i-3, 0); j < min(i+1, len(ivs)); j++ {
			iv := ivs[j]
			if iv.Start < g.End && iv.End > g.Start {
				near = iv
				d, n := iv.End-iv.Start, g.End-g.Start
				ok = abs64(d-n) <= n/10+20_000
			}
		}
		switch {
		case ok:
			matched++
		case near.End == 0 || near.Start-g.Start > noiseStallHead:
			unseen++ // nothing seen, or a stall of the vCPU before what was
		default:
			missed = append(missed, fmt.Sprintf("gap %d +%d us, interval %d +%d us (start %+d us, causes %#x, largest %d)", g.Start, (g.End-g.Start)/1000,
				near.Start, (near.End-near.Start)/1000, (near.Start-g.Start)/1000, near.causes, near.top))
		}
	}
	return matched, unseen, missed
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

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

// TestNoiseLoopChild is the loop mode of the test binary (noiseLoopEnv set):
// pinned to the last CPU, named noiseLoopName, it spins for noiseLoopRun.
func TestNoiseLoopChild(t *testing.T) {
	out := os.Getenv(noiseLoopEnv)
	if out == "" {
		t.Skip("the loop of TestNoiseAgreesWithLoop, run by it")
	}
	runtime.LockOSThread()
	cpu := runtime.NumCPU() - 1
	if err := workload.Pin(0, cpu); err != nil {
		t.Fatal(err)
	}
	if err := workload.SetName(noiseLoopName); err != nil {
		t.Fatal(err)
	}
	// A polling thread runs real-time: only interrupts, throttling, the
	// hypervisor and higher priorities take its CPU.
	if err := workload.SetScheduler(0, workload.FIFO, 1); err != nil {
		t.Fatal(err)
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
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
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

// Each gap of the loop over noiseLoopMin is inside one noise interval of
// its thread whose length agrees within 10% + 20 us; 90% of them at least
// (a gap the rings lapped before a read is lost), over 20 gaps at least
// (a quiet CPU is run again). Agreement is also required the other way:
// most long intervals are gaps the loop saw.
func TestNoiseAgreesWithLoop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	for attempt := 1; ; attempt++ {
		gaps, ivs := runNoiseLoop(t)
		matched, missed := matchGaps(gaps, ivs)
		t.Logf("attempt %d: %d loop gaps > %d us, %d noise intervals; %d matched within 10%% + 20 us", attempt,
			len(gaps), noiseLoopMin/1000, len(ivs), matched)
		for _, m := range missed[:min(len(missed), 10)] {
			t.Logf("  unmatched: %s", m)
		}
		t.Logf("holes between intervals inside one loop gap (us): %v", holes(gaps, ivs))
		if len(gaps) < 20 && attempt < 3 {
			t.Logf("only %d gaps over %d us: too quiet to judge, run again", len(gaps), noiseLoopMin/1000)
			continue
		}
		if len(gaps) < 20 {
			t.Skipf("the CPU was too quiet to judge: %d gaps over %d us in %d runs", len(gaps), noiseLoopMin/1000, attempt)
		}
		if matched*10 < len(gaps)*9 {
			t.Errorf("%d of %d loop gaps matched by a noise interval; want 90%%", matched, len(gaps))
		}
		return
	}
}

// runNoiseLoop runs the loop child under the engine and returns its gaps
// and its thread's noise intervals.
func runNoiseLoop(t *testing.T) ([]noiseGap, []noiseGap) {
	e, err := Load(Config{Trace: true, FlightPerCPU: DefaultFlightPerCPU})
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoiseLoopChild$", "-test.count=1")
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
// 10% + 20 us of theirs, and says the others.
func matchGaps(gaps, ivs []noiseGap) (matched int, missed []string) {
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
		if ok {
			matched++
		} else {
			missed = append(missed, fmt.Sprintf("gap %d +%d us, interval %d +%d us (start %+d us, causes %#x, largest %d)", g.Start, (g.End-g.Start)/1000,
				near.Start, (near.End-near.Start)/1000, (near.Start-g.Start)/1000, near.causes, near.top))
		}
	}
	return matched, missed
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

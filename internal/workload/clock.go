package workload

import (
	"math/bits"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nanotime is the runtime's CLOCK_MONOTONIC reading (vDSO, no syscall, no
// allocation): the clock clock_nanosleep sleeps on below.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now returns CLOCK_MONOTONIC in nanoseconds.
func Now() int64 { return nanotime() }

func uintptrOf[T any](p *T) uintptr { return uintptr(unsafe.Pointer(p)) }

// SleepUntil sleeps until CLOCK_MONOTONIC reaches deadline (ns) with an
// absolute-time clock_nanosleep, so lateness never accumulates.
func (t *Thread) SleepUntil(deadline int64) {
	t.ts = unix.NsecToTimespec(deadline)
	for {
		_, e := t.call6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&t.ts)), 0, 0, 0)
		if e != unix.EINTR {
			return
		}
	}
}

// call6 makes a system call that may block or run long from thread t
// (nil: not a workload thread), in the runtime's system-call state.
//
// The highest-priority thread of its CPU keeps its P there
// (entersyscall, as unix.Syscall6): leaving the call is then a single
// compare-and-swap. A thread below another one of its CPU gives the P up
// first (entersyscallblock), and pays a runtime lock when it leaves. Since
// Go 1.26, a thread that takes back a P held in a system call holds that
// goroutine's scan bit meanwhile (runtime.setBlockOnExitSyscall), which
// keeps it from leaving the call; a thread leaving its own call does that
// to steal its old P back, from whichever goroutine got it. A thread of
// lower priority preempted while doing so, on the CPU of the one it
// holds, never finished: the held one spun in exitsyscall at its higher
// priority (casgstatus, sched_yield) and RT throttling stopped both (the
// PREEMPT_RT guest under TCG, priority-inversion: 2 boots of 3 hung). A
// thread without a P has no old P to steal, and giving up the P in every
// call made the highest threads sleep on the runtime's lock behind the
// lower ones (hidden-blocking: response p50 43 us instead of 1 ms).
func (t *Thread) call6(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, unix.Errno) {
	if t != nil && t.yieldsP.Load() {
		return blockingCall6(trap, a1, a2, a3, a4, a5, a6)
	}
	r, _, e := unix.Syscall6(trap, a1, a2, a3, a4, a5, a6)
	return r, e
}

// blockingCall6 is a system call without the P (entersyscallblock).
//
//go:nosplit
func blockingCall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, unix.Errno) {
	entersyscallblock()
	r, _, e := unix.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
	exitsyscall()
	return r, e
}

// Sleep sleeps for d (relative).
func (t *Thread) Sleep(d time.Duration) { t.SleepUntil(Now() + int64(d)) }

// CPUTime returns the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns.
func (t *Thread) CPUTime() int64 {
	_, _, _ = unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&t.ts)), 0)
	return t.ts.Nano()
}

// Work burns d of the thread's own CPU time. Measured in CPU time rather
// than wall time, "1 ms of work" stays 1 ms of work when the thread is
// preempted: it finishes later instead of shorter, which is what makes
// preemption and priority inversion visible. Call it on the thread itself.
//
// The spin runs in the Go runtime's system-call state (see call6 for
// the P). The runtime asks a goroutine that has held its P for 10 ms to
// yield, and a goroutine locked to its thread yields by sleeping on a futex
// until another thread hands it back: a voluntary sleep in the middle of
// the work, that a scheduler monitor would rightly report. A goroutine in a
// system call is not asked to yield.
func (t *Thread) Work(d time.Duration) {
	end := t.CPUTime() + int64(d)
	if t.yieldsP.Load() {
		entersyscallblock()
	} else {
		entersyscall()
	}
	spinUntil(&t.ts, end)
	exitsyscall()
}

// Spin busy-waits d of wall-clock time (CLOCK_MONOTONIC), however much of
// it the thread really gets: a CPU hog's burst. In the runtime's system-call
// state, like Work.
func (t *Thread) Spin(d time.Duration) {
	end := Now() + int64(d)
	if t.yieldsP.Load() {
		entersyscallblock()
	} else {
		entersyscall()
	}
	spinUntilClock(&t.ts, unix.CLOCK_MONOTONIC, end)
	exitsyscall()
}

// spinUntil runs between entersyscall (or entersyscallblock) and
// exitsyscall, where the stack must not grow: nosplit, and it calls only
// nosplit code.
//
//go:nosplit
func spinUntil(ts *unix.Timespec, end int64) {
	spinUntilClock(ts, unix.CLOCK_THREAD_CPUTIME_ID, end)
}

//go:nosplit
func spinUntilClock(ts *unix.Timespec, clock uintptr, end int64) {
	for {
		unix.RawSyscall(unix.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(ts)), 0) //nolint:errcheck // CLOCK_MONOTONIC with a valid pointer cannot fail
		if int64(ts.Sec)*1e9+int64(ts.Nsec) >= end {
			return
		}
	}
}

//go:linkname entersyscall runtime.entersyscall
func entersyscall()

//go:linkname entersyscallblock runtime.entersyscallblock
func entersyscallblock()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

// Periodic drives an absolute-time periodic loop and measures it from the
// inside: how late each wakeup was against its deadline, and how long each
// cycle took from wakeup to the next sleep.
type Periodic struct {
	Next   int64 // next deadline, CLOCK_MONOTONIC ns
	Period int64
	// CatchUp: never skip a deadline. A cycle that ran past the next
	// deadline arms it anyway, and clock_nanosleep returns at once without
	// a sleep (the overrunning loops of many control programs).
	CatchUp bool
	Stats   LoopStats
	woke    int64
}

// LoopStats are a periodic thread's own measurements (ns). Written only by
// the thread; read them after it stopped.
type LoopStats struct {
	Cycles   int64 // wakeups
	Overruns int64 // deadlines the cycle ran past: skipped, or armed late with CatchUp
	LateMin  int64 // wakeup time - deadline
	LateMax  int64
	LateSum  int64
	CycleMax int64 // wakeup -> start of the next sleep (wall time)
	CycleSum int64
	First    int64 // first and last wakeup, for the mean period
	Last     int64
	// Log2 histograms: bucket k counts values in [2^(k-1), 2^k) ns.
	LateHist  [64]int64
	CycleHist [64]int64
}

// AtLeast counts the values of a log2 histogram in buckets at or above the
// one holding ns: the values from the largest power of two <= ns upward
// (AtLeast(h, 1100 us) counts values from 1048.6 us).
func AtLeast(h *[64]int64, ns int64) int64 {
	var n int64
	for k := bits.Len64(uint64(ns)); k < len(h); k++ {
		n += h[k]
	}
	return n
}

func bucket(v int64) int {
	if v < 0 {
		return 0
	}
	return bits.Len64(uint64(v))
}

// LateAvg is the mean wakeup lateness, ns.
func (s *LoopStats) LateAvg() int64 {
	if s.Cycles == 0 {
		return 0
	}
	return s.LateSum / s.Cycles
}

// CycleAvg is the mean cycle time, ns.
func (s *LoopStats) CycleAvg() int64 {
	if s.Cycles < 2 {
		return 0
	}
	return s.CycleSum / (s.Cycles - 1)
}

// MeanPeriod is the mean time between wakeups, ns.
func (s *LoopStats) MeanPeriod() int64 {
	if s.Cycles < 2 {
		return 0
	}
	return (s.Last - s.First) / (s.Cycles - 1)
}

// NewPeriodic starts a loop whose first deadline is first.
func NewPeriodic(first int64, period time.Duration) *Periodic {
	return &Periodic{Next: first, Period: int64(period)}
}

// Wait ends the current cycle: it sleeps until the next deadline, skipping
// the deadlines the cycle already ran past (a control loop that overran
// starts its next cycle on time rather than catching up in a burst), or,
// with CatchUp, arming them anyway.
func (p *Periodic) Wait(t *Thread) {
	now := Now()
	if p.woke != 0 {
		c := now - p.woke
		p.Stats.CycleSum += c
		p.Stats.CycleHist[bucket(c)]++
		if c > p.Stats.CycleMax {
			p.Stats.CycleMax = c
		}
		p.Next += p.Period
		if p.CatchUp && p.Next <= now {
			p.Stats.Overruns++
		}
		for !p.CatchUp && p.Next <= now {
			p.Next += p.Period
			p.Stats.Overruns++
		}
	}
	t.SleepUntil(p.Next)
	now = Now()
	late := now - p.Next
	s := &p.Stats
	if s.Cycles == 0 {
		s.LateMin, s.First = late, now
	}
	s.Cycles++
	s.LateSum += late
	s.LateHist[bucket(late)]++
	if late < s.LateMin {
		s.LateMin = late
	}
	if late > s.LateMax {
		s.LateMax = late
	}
	s.Last = now
	p.woke = now
}

// Stat accumulates durations (ns) measured by one thread.
type Stat struct {
	Count, Min, Max, Sum int64
}

// Add records one value.
func (s *Stat) Add(v int64) {
	if s.Count == 0 || v < s.Min {
		s.Min = v
	}
	if v > s.Max {
		s.Max = v
	}
	s.Count++
	s.Sum += v
}

// Avg is the mean value.
func (s *Stat) Avg() int64 {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / s.Count
}

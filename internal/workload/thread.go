// Package workload provides the real-time thread primitives rtscope's
// scenarios are built from, in pure Go: a function on its own OS thread with
// a name, a CPU and a scheduling policy, absolute-time periodic sleeps, busy
// work measured in the thread's own CPU time, and futex/eventfd based
// synchronisation. Nothing here allocates inside a loop, so an RT loop never
// waits for the Go runtime (callers also turn the GC off).
package workload

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Policy is a Linux scheduling policy.
type Policy int

// Scheduling policies (values of SCHED_*).
const (
	Other Policy = 0
	FIFO  Policy = 1
	RR    Policy = 2
)

func (p Policy) String() string {
	switch p {
	case Other:
		return "SCHED_OTHER"
	case FIFO:
		return "SCHED_FIFO"
	case RR:
		return "SCHED_RR"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// Spec says how a thread is set up before its function runs.
type Spec struct {
	Name     string // comm, at most 15 bytes
	CPU      int    // CPU to pin to; -1 leaves the affinity alone
	Policy   Policy
	Priority int // 1..99 for FIFO/RR, ignored for OTHER
	// TimerSlack sets the thread's timer slack (PR_SET_TIMERSLACK) when
	// non-zero: SCHED_OTHER sleepers get 50 us by default, which would
	// shift an absolute-time wakeup that must land at a precise instant.
	TimerSlack time.Duration
}

// MaxName is the longest thread name the kernel keeps (TASK_COMM_LEN - 1).
const MaxName = 15

// Thread is a running thread started by a Group.
type Thread struct {
	Spec
	Tid   int
	group *Group
	done  chan struct{}
	ts    unix.Timespec // scratch for syscalls: lives on the heap, so passing it allocates nothing
	// yieldsP: another thread of the group can preempt it on its CPU (a
	// higher real-time priority there): its calls give up the runtime's P
	// (Thread.call6). Group.Go keeps it up to date.
	yieldsP atomic.Bool
}

// Stopping tells the thread's loop to return; checked once per iteration.
// It is true once Stop was called, or once the group's end (StopAt) has
// passed, whichever comes first.
func (t *Thread) Stopping() bool {
	g := t.group
	if g.stop.Load() {
		return true
	}
	end := g.end.Load()
	return end != 0 && Now() >= end
}

// Group starts threads and stops them together.
type Group struct {
	stop    atomic.Bool
	end     atomic.Int64 // CLOCK_MONOTONIC ns; 0: no end
	threads []*Thread
	wakers  []func()
}

// StopAt makes the threads' loops return by themselves from CLOCK_MONOTONIC
// time end (ns) on, without waiting for Stop. The RT threads of a scenario
// can starve the CPU's soft timers (ktimers/N, SCHED_FIFO 1, on
// PREEMPT_RT), and with them a runtime thread of this process pinned there
// whose wakeup Stop's caller needs: a PREEMPT_RT guest ran
// priority-inversion for 650 s instead of 3 s, ktimers/1 runnable all
// along (RCU stall; that run's spinning thread was livelocked in the Go
// runtime, fixed in Thread.call6). Threads that end at their deadline
// break such a cycle.
func (g *Group) StopAt(end int64) { g.end.Store(end) }

// Go starts fn on a new OS thread set up as s and returns once the thread is
// named, pinned and has its policy, or with the error that prevented it.
// The thread is never unlocked from its goroutine, so it exits when fn
// returns and no other goroutine ever runs with its policy and affinity.
func (g *Group) Go(s Spec, fn func(t *Thread)) (*Thread, error) {
	if len(s.Name) > MaxName {
		return nil, fmt.Errorf("thread name %q is longer than %d bytes", s.Name, MaxName)
	}
	t := &Thread{Spec: s, group: g, done: make(chan struct{})}
	ready := make(chan error, 1)
	retireIdleThreads()
	go func() {
		runtime.LockOSThread()
		t.Tid = unix.Gettid()
		if err := setup(t.Tid, s); err != nil {
			ready <- err
			close(t.done)
			return // the locked thread exits with the goroutine
		}
		ready <- nil
		defer close(t.done)
		fn(t)
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("thread %s: %w", s.Name, err)
	}
	g.threads = append(g.threads, t)
	g.rank()
	return t, nil
}

// rank marks the threads that a thread of higher real-time priority can
// preempt on their CPU (Thread.yieldsP): the same CPU, or either of them
// not pinned. A thread started later may change an earlier one's mark.
func (g *Group) rank() {
	for _, t := range g.threads {
		below := false
		for _, u := range g.threads {
			shared := t.CPU < 0 || u.CPU < 0 || t.CPU == u.CPU
			if u != t && shared && u.rtPriority() > t.rtPriority() {
				below = true
			}
		}
		t.yieldsP.Store(below)
	}
}

// rtPriority is the real-time priority of the thread's policy (0 for
// SCHED_OTHER).
func (s Spec) rtPriority() int {
	if s.Policy == FIFO || s.Policy == RR {
		return s.Priority
	}
	return 0
}

// retireIdleThreads makes the runtime's idle threads exit, so that the next
// goroutine gets a brand-new thread. The runtime reuses its threads, and a
// reused one brings its history (timer sleeps, long runs for other
// goroutines) into an RT thread: a monitor that follows the process from
// its start would charge that history to the RT thread. Each idle thread is
// taken by a goroutine that locks itself to it and returns without
// unlocking, which ends the thread.
func retireIdleThreads() {
	n := 0
	if ents, err := os.ReadDir("/proc/self/task"); err == nil {
		n = len(ents)
	}
	var wg, started sync.WaitGroup
	release := make(chan struct{})
	for i := 0; i < n+2; i++ {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			started.Done()
			<-release
		}()
	}
	started.Wait()
	close(release)
	wg.Wait()
}

func setup(tid int, s Spec) error {
	// The name first: rtscope takes a task's name at its switches, and a
	// thread that blocks right after its setup (a blocker waiting all run)
	// would keep its old name. (Naming last lost "blocker" in the
	// PREEMPT_RT guest.)
	if err := SetName(s.Name); err != nil {
		return err
	}
	if s.TimerSlack > 0 {
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(s.TimerSlack.Nanoseconds()), 0, 0, 0); err != nil {
			return fmt.Errorf("setting timer slack: %w", err)
		}
	}
	// Policy first, then the CPU: a thread moved as SCHED_OTHER onto a CPU
	// that an RT thread keeps busy would wait there to set its policy.
	if err := SetScheduler(tid, s.Policy, s.Priority); err != nil {
		return err
	}
	if s.CPU >= 0 {
		return Pin(tid, s.CPU)
	}
	return nil
}

// OnStop registers a function that unblocks threads when the group stops
// (posting a semaphore, signalling an eventfd...).
func (g *Group) OnStop(f func()) { g.wakers = append(g.wakers, f) }

// Threads lists the started threads.
func (g *Group) Threads() []*Thread { return g.threads }

// Stop asks every thread to return and waits up to timeout for them.
func (g *Group) Stop(timeout time.Duration) error {
	g.stop.Store(true)
	for _, w := range g.wakers {
		w()
	}
	deadline := time.After(timeout)
	for _, t := range g.threads {
		select {
		case <-t.done:
		case <-deadline:
			return fmt.Errorf("thread %s (tid %d) did not stop within %v", t.Name, t.Tid, timeout)
		}
	}
	return nil
}

// Stopped tells whether Stop was called.
func (g *Group) Stopped() bool { return g.stop.Load() }

// SetName names the calling thread (its comm).
func SetName(name string) error {
	var b [MaxName + 1]byte
	copy(b[:MaxName], name)
	if err := unix.Prctl(unix.PR_SET_NAME, uintptrOf(&b[0]), 0, 0, 0); err != nil {
		return fmt.Errorf("naming thread %q: %w", name, err)
	}
	return nil
}

// Pin restricts thread tid to one CPU.
func Pin(tid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		return fmt.Errorf("pinning to CPU %d: %w", cpu, err)
	}
	return nil
}

// schedResetOnFork keeps threads or processes cloned from an RT thread out of RT.
const schedResetOnFork = 0x01

// SetScheduler sets the policy and priority of thread tid.
func SetScheduler(tid int, p Policy, prio int) error {
	attr := unix.SchedAttr{Policy: uint32(p), Flags: schedResetOnFork}
	switch p {
	case FIFO, RR:
		if prio < 1 || prio > 99 {
			return fmt.Errorf("%v priority %d is outside 1-99", p, prio)
		}
		attr.Priority = uint32(prio)
	case Other:
	default:
		return fmt.Errorf("unsupported policy %v", p)
	}
	if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("setting %v %d needs root or CAP_SYS_NICE", p, prio)
		}
		return fmt.Errorf("setting %v %d: %w", p, prio, err)
	}
	return nil
}

// LockMemory locks the process's current and future pages (mlockall), so
// no RT thread takes a page fault; Unlock undoes it.
func LockMemory() error {
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
		return fmt.Errorf("locking memory (mlockall): %w", err)
	}
	return nil
}

// UnlockMemory undoes LockMemory.
func UnlockMemory() { _ = unix.Munlockall() }

// CPUs returns the CPUs this process may run on, in order.
func CPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// KeepOff moves every thread of the process off cpu (when another CPU is
// allowed), so that the Go runtime's own threads do not compete with the RT
// threads pinned there; threads created later inherit the mask from their
// creator. The returned function gives every thread the original mask back.
func KeepOff(cpu int) (restore func(), err error) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return func() {}, err
	}
	others := orig
	others.Clear(cpu)
	if others.Count() == 0 {
		return func() {}, nil
	}
	apply := func(set *unix.CPUSet, match func(cur *unix.CPUSet) bool) {
		ents, _ := os.ReadDir("/proc/self/task")
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				var cur unix.CPUSet
				if unix.SchedGetaffinity(tid, &cur) == nil && match(&cur) {
					_ = unix.SchedSetaffinity(tid, set)
				}
			}
		}
	}
	// Threads pinned on purpose (RT threads) are left alone.
	apply(&others, func(cur *unix.CPUSet) bool { return cur.Count() > 1 && cur.IsSet(cpu) })
	return func() { apply(&orig, func(cur *unix.CPUSet) bool { return *cur == others }) }, nil
}

// NoAsyncPreempt re-executes the running program with
// GODEBUG=asyncpreemptoff=1 unless it already has it, so that the Go
// runtime never signals an RT thread (the setting is read at start-up
// only). Test binaries call it from TestMain; rtscope's main does the same.
func NoAsyncPreempt() {
	g := os.Getenv("GODEBUG")
	if strings.Contains(g, "asyncpreemptoff=1") {
		return
	}
	if g != "" {
		g += ","
	}
	env := append(os.Environ(), "GODEBUG="+g+"asyncpreemptoff=1")
	if exe, err := os.Executable(); err == nil {
		_ = unix.Exec(exe, os.Args, env) // returns only on failure: run as is
	}
}

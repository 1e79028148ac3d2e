package workload

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
}

func TestBadSpec(t *testing.T) {
	var g Group
	if _, err := g.Go(Spec{Name: "a-name-longer-than-15", CPU: -1}, func(*Thread) {}); err == nil {
		t.Error("a 21-byte name was accepted")
	}
	if _, err := g.Go(Spec{Name: "x", CPU: -1, Policy: FIFO, Priority: 100}, func(*Thread) {}); err == nil {
		t.Error("FIFO priority 100 was accepted")
	}
}

// A thread gets its name, CPU and policy before its function runs, and the
// RT loop primitives allocate nothing.
func TestThreadSetupAndNoAllocation(t *testing.T) {
	needRoot(t)
	cpus, _ := CPUs()
	cpu := cpus[len(cpus)-1]
	var g Group
	res := make(chan string, 1)
	th, err := g.Go(Spec{Name: "rt-test", CPU: cpu, Policy: FIFO, Priority: 7}, func(th *Thread) {
		sem := &Sem{}
		efd, _ := NewEventFD()
		defer efd.Release()
		var m Mutex
		var pm PIMutex
		p := NewPeriodic(Now(), 100*time.Microsecond)
		loop := func() {
			p.Wait(th)
			th.Work(10 * time.Microsecond)
			th.Spin(10 * time.Microsecond)
			sem.Post(th)
			sem.Wait(th)
			efd.Signal(th, 1)
			efd.Wait(th)
			m.Lock(th)
			m.Unlock(th)
			pm.Lock(th)
			pm.Unlock(th)
		}
		// Both ways of making calls: keeping the P, and giving it up
		// (a thread below another one of its CPU).
		keep := testing.AllocsPerRun(20, loop)
		th.yieldsP.Store(true)
		yield := testing.AllocsPerRun(20, loop)
		res <- fmt.Sprint(keep + yield)
		for !th.Stopping() {
			th.Sleep(time.Millisecond)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := <-res; a != "0" {
		t.Errorf("RT primitives allocated %s times per loop", a)
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/comm", th.Tid))
	attr, err := unix.SchedGetAttr(th.Tid, 0)
	if err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	unix.SchedGetaffinity(th.Tid, &set)
	if strings.TrimSpace(string(comm)) != "rt-test" || attr.Policy != 1 || attr.Priority != 7 || set.Count() != 1 || !set.IsSet(cpu) {
		t.Errorf("thread is %q policy %d prio %d on %d CPUs; want rt-test FIFO 7 on CPU %d", comm, attr.Policy, attr.Priority, set.Count(), cpu)
	}
	if err := g.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
}

// Work counts the thread's CPU time: two works sharing one CPU need about
// twice the wall time of one from the first start to the last end. Each
// thread's own wall time is no measure: one may run alone before the other
// is set up (seen under load: 400 and 300 ms), but the span cannot shrink
// below the CPU time the two consumed on one CPU.
func TestWorkIsCPUTime(t *testing.T) {
	needRoot(t)
	cpus, _ := CPUs()
	cpu := cpus[len(cpus)-1]
	var g Group
	type span struct{ start, end time.Time }
	spans := make(chan span, 2)
	for _, n := range []string{"w1", "w2"} {
		if _, err := g.Go(Spec{Name: n, CPU: cpu, Policy: RR, Priority: 5}, func(th *Thread) {
			start := time.Now()
			th.Work(300 * time.Millisecond)
			spans <- span{start, time.Now()}
		}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := <-spans, <-spans
	first, last := a.start, a.end
	if b.start.Before(first) {
		first = b.start
	}
	if b.end.After(last) {
		last = b.end
	}
	if took := last.Sub(first); took < 570*time.Millisecond {
		t.Errorf("two 300 ms works sharing one CPU took %v of wall time from the first start to the last end; want at least 600 ms less 5%%", took)
	}
	g.Stop(time.Second)
}

// Both mutexes exclude: concurrent increments are not lost.
func TestMutexes(t *testing.T) {
	for _, m := range []Locker{&Mutex{}, &PIMutex{}} {
		var g Group
		counter := 0
		done := make(chan struct{}, 2)
		for i := 0; i < 2; i++ {
			if _, err := g.Go(Spec{Name: "locker", CPU: -1}, func(th *Thread) {
				for j := 0; j < 20000; j++ {
					m.Lock(th)
					counter++
					m.Unlock(th)
				}
				done <- struct{}{}
			}); err != nil {
				t.Fatal(err)
			}
		}
		<-done
		<-done
		if counter != 40000 {
			t.Errorf("%T: counter %d, want 40000", m, counter)
		}
	}
}

// A thread gives up its P in its calls exactly when a thread of higher
// real-time priority can preempt it on its CPU (call6): the highest of a
// CPU keeps it, and so do threads of equal priority.
func TestRankMarksThreadsBelowAnother(t *testing.T) {
	th := func(name string, cpu int, pol Policy, prio int) *Thread {
		return &Thread{Spec: Spec{Name: name, CPU: cpu, Policy: pol, Priority: prio}}
	}
	h, m, l := th("H", 1, FIFO, 90), th("M", 1, FIFO, 50), th("L", 1, FIFO, 10)
	other := th("other", 1, Other, 0)
	alone := th("alone", 0, FIFO, 5)
	p1, p2 := th("p1", 2, FIFO, 50), th("p2", 2, FIFO, 50)
	g := Group{threads: []*Thread{h, m, l, other, alone, p1, p2}}
	g.rank()
	for _, c := range []struct {
		t    *Thread
		want bool
	}{{h, false}, {m, true}, {l, true}, {other, true}, {alone, false}, {p1, false}, {p2, false}} {
		if got := c.t.yieldsP.Load(); got != c.want {
			t.Errorf("%s (CPU %d, %s %d): gives up its P %v, want %v", c.t.Name, c.t.CPU, c.t.Policy, c.t.Priority, got, c.want)
		}
	}
	// An unpinned thread of higher priority can preempt anyone.
	g.threads = append(g.threads, th("roamer", -1, RR, 95))
	g.rank()
	if !h.yieldsP.Load() || !alone.yieldsP.Load() || g.threads[len(g.threads)-1].yieldsP.Load() {
		t.Error("an unpinned thread of higher priority did not put the pinned ones below it")
	}
}

func TestSemCloseWakesWaiter(t *testing.T) {
	var g Group
	var s Sem
	got := make(chan bool, 1)
	g.Go(Spec{Name: "waiter", CPU: -1}, func(th *Thread) { got <- s.Wait(th) })
	time.Sleep(20 * time.Millisecond)
	s.Close()
	if <-got {
		t.Error("Wait on a closed semaphore returned true")
	}
}

func TestEventFDCounts(t *testing.T) {
	e, err := NewEventFD()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	e.Signal(nil, 1)
	e.Signal(nil, 2)
	if n := e.Wait(nil); n != 3 {
		t.Errorf("Wait returned %d, want 3", n)
	}
	e.Close()
	if n := e.Wait(nil); n != 0 {
		t.Errorf("Wait after Close returned %d, want 0", n)
	}
}

func voluntarySwitches(t *testing.T, tid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", tid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatal("no voluntary_ctxt_switches")
	return 0
}

// A periodic RT loop sleeps only where it means to: once per cycle. The Go
// runtime never parks it in the middle of its work (see Work).
func TestLoopSleepsOnlyOnItsTimer(t *testing.T) {
	needRoot(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16)) // as scenarios do
	cpus, _ := CPUs()
	var g Group
	p := NewPeriodic(Now()+int64(10*time.Millisecond), time.Millisecond)
	before := make(chan int, 1)
	th, err := g.Go(Spec{Name: "rt-loop", CPU: cpus[len(cpus)-1], Policy: FIFO, Priority: 10}, func(th *Thread) {
		before <- voluntarySwitches(t, th.Tid)
		for !th.Stopping() {
			p.Wait(th)
			th.Work(400 * time.Microsecond)
			th.Work(11 * time.Millisecond / 100) // two calls: work on both sides of a function call
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	v0 := <-before
	time.Sleep(1500 * time.Millisecond)
	v1 := voluntarySwitches(t, th.Tid)
	g.Stop(time.Second)
	sleeps, cycles := int64(v1-v0), p.Stats.Cycles+p.Stats.Overruns
	t.Logf("%d sleeps, %d cycles", sleeps, cycles)
	if sleeps > cycles+cycles/50+2 {
		t.Errorf("the loop slept %d times in %d cycles: the Go runtime parks it", sleeps, cycles)
	}
}

// TestStopAtEndsLoopsByThemselves: past the group's end, Stopping is true
// without a call to Stop, so a spinning loop returns even when the process
// that would call Stop cannot run (its CPU starved by the loop's own load).
func TestStopAtEndsLoopsByThemselves(t *testing.T) {
	var g Group
	th, err := g.Go(Spec{Name: "spinner", CPU: -1}, func(th *Thread) {
		for !th.Stopping() {
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if th.Stopping() {
		t.Fatal("Stopping before any end or Stop")
	}
	g.StopAt(Now() + int64(10*time.Millisecond))
	select {
	case <-th.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not end by itself after its end")
	}
	if g.Stopped() {
		t.Error("Stopped reports a Stop that was never called")
	}
	if err := g.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
}

package engine

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

// TestPolicySetWhileRunning (issue 15, item 7): a thread tracked as
// SCHED_OTHER sets SCHED_FIFO 10 on itself and then never sleeps; it is
// only preempted (by a FIFO 20 thread waking every millisecond on its
// CPU) and switched in again, never woken. Its statistics say FIFO 10, the
// change and both identities while it still runs: before, they kept the
// identity it was discovered with until it slept or exited.
func TestPolicySetWhileRunning(t *testing.T) {
	e, cpu := attachedOnLastCPU(t)

	var g workload.Group
	defer g.Stop(2 * time.Second)
	tracked := make(chan struct{})
	// The spinner: tracked as OTHER, then FIFO 10 set by itself with a raw
	// system call and a spin in the runtime's system-call state, so that
	// nothing parks the thread (a goroutine preempted by Go's scheduler
	// sleeps on a futex: a wakeup, which refreshed the identity before).
	spinner, err := g.Go(workload.Spec{Name: "rts-spinner", CPU: cpu, Policy: workload.Other}, func(t *workload.Thread) {
		<-tracked
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: uint32(workload.FIFO), Priority: 10}
		if _, _, e := unix.RawSyscall(unix.SYS_SCHED_SETATTR, 0, uintptr(unsafe.Pointer(&attr)), 0); e != 0 {
			return
		}
		// Long enough for the check below on a loaded machine: 500 ms with
		// a 300 ms deadline failed once when other builds kept the OTHER
		// spinner from reaching its sched_setattr in time.
		t.Spin(2 * time.Second)
		_ = workload.SetScheduler(t.Tid, workload.Other, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	tid := spinner.Tid
	if err := e.WantTID(uint32(tid), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.Scan(); err != nil {
		t.Fatal(err)
	}
	close(tracked)
	// The preempter: FIFO 20 on the same CPU, 1 ms sleeps.
	if _, err := g.Go(workload.Spec{Name: "rts-preempter", CPU: cpu, Policy: workload.FIFO, Priority: 20}, func(t *workload.Thread) {
		for !t.Stopping() {
			t.Sleep(time.Millisecond)
		}
	}); err != nil {
		t.Fatal(err)
	}

	var s *TaskStats
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		all, err := e.AllStats()
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range all {
			if st.Tid == uint32(tid) {
				s = st
			}
		}
		if s != nil && s.Policy == uint32(workload.FIFO) {
			break
		}
	}
	if s == nil {
		t.Fatalf("thread %d was not tracked", tid)
	}
	want := []Identity{{0, 120}, {1, 89}}
	seen := SchedSeen(s)
	if s.Policy != 1 || s.Prio != 89 || s.SchedChanges != 1 || len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("running spinner: policy %d prio %d, %d changes, seen %v; want FIFO (1) 89, 1 change, seen %v",
			s.Policy, s.Prio, s.SchedChanges, seen, want)
	}
}

// TestTrackedAtRenameByNewName: a thread that a --comm target wants under
// the name it gives itself is tracked at task_rename under that name, at
// once: the tracepoint fires before the kernel copies the name, and its
// statistics kept the old one until its next switch-in (serve labelled a
// short task exec'd from bash "bash" when it exited first). The thread
// spins without sleeping from its rename on, so no switch-in corrects it.
func TestTrackedAtRenameByNewName(t *testing.T) {
	e, cpu := attachedOnLastCPU(t)
	const newName = "rts-renamed"
	if err := e.WantComm(newName, 0); err != nil {
		t.Fatal(err)
	}
	var g workload.Group
	defer g.Stop(2 * time.Second)
	rename := make(chan struct{})
	th, err := g.Go(workload.Spec{Name: "rts-old-name", CPU: cpu, Policy: workload.Other}, func(t *workload.Thread) {
		<-rename
		if workload.SetName(newName) == nil {
			t.Spin(2 * time.Second)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	close(rename)
	var s *TaskStats
	for deadline := time.Now().Add(1500 * time.Millisecond); s == nil && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		all, err := e.AllStats()
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range all {
			if st.Tid == uint32(th.Tid) {
				s = st
			}
		}
	}
	if s == nil {
		t.Fatalf("thread %d renamed %q was not tracked", th.Tid, newName)
	}
	if got := CommString(s.Comm); got != newName {
		t.Errorf("tracked at its rename as %q, want %q", got, newName)
	}
}

// attachedOnLastCPU loads and attaches an engine (closed when the test
// ends) and returns it with the last CPU the test may use, for its threads.
func attachedOnLastCPU(t *testing.T) (*Engine, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	cpus, err := workload.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	e, err := Load(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Attach(); err != nil {
		t.Fatal(err)
	}
	return e, cpus[len(cpus)-1]
}

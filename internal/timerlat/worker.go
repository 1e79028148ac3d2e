package timerlat

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nanotime is CLOCK_MONOTONIC through the vDSO, without allocation.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// worker is one measuring thread, pinned to its CPU.
type worker struct {
	cpu    int
	period int64 // ns
	prio   Priority

	tid     int
	rseq    uintptr       // the thread's rseq area (see rseqAreas), 0: none
	rseqErr error         // rseq registration failed
	cycles  atomic.Uint64 // sleeps completed
	missed  atomic.Uint64 // periods skipped: woke more than a period late
}

// start runs the thread; it reports on ready once set up (or failed), waits
// for go, then loops until stop. done is signalled when the thread is gone.
func (w *worker) start(ready chan<- error, goCh <-chan struct{}, stop *atomic.Bool, done *sync.WaitGroup) {
	done.Add(1)
	go func() {
		defer done.Done()
		// The thread is never unlocked: it exits with the goroutine, so its
		// real-time policy and affinity never leak into Go's thread pool.
		runtime.LockOSThread()
		w.tid = unix.Gettid()
		if err := w.setup(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		<-goCh
		if stop.Load() {
			return
		}
		w.loop(stop)
	}()
}

func (w *worker) setup() error {
	name := []byte(fmt.Sprintf("rtscope-tl/%d\x00", w.cpu))
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
	var set unix.CPUSet
	set.Set(w.cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning the measuring thread to CPU %d: %v", w.cpu, err)
	}
	if w.rseq != 0 {
		// Go does not register rseq (glibc does, for every thread); the
		// engine sees the return to user space through the rseq_update
		// tracepoint where fexit on hrtimer_nanosleep is not allowed.
		const rseqLen, rseqSig = 32, 0x53053053
		_, _, e := unix.RawSyscall6(unix.SYS_RSEQ, w.rseq, rseqLen, 0, rseqSig, 0, 0)
		if e != 0 && e != unix.EBUSY {
			w.rseqErr = e
		}
	}
	return w.prio.apply()
}

// rseqAreas allocates one 32-byte, 32-aligned rseq area per thread. The
// memory is never unmapped: the kernel writes into an area on every return
// to user space of its thread, until the very end of the thread, which Go
// does not let us observe.
func rseqAreas(n int) ([]uintptr, error) {
	size := (n*32 + 4095) / 4096 * 4096
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("allocating rseq areas: %v", err)
	}
	out := make([]uintptr, n)
	for i := range out {
		out[i] = uintptr(unsafe.Pointer(&mem[i*32]))
	}
	return out, nil
}

// loop is the measurement: an absolute-time periodic sleep, nothing else.
// The latencies are measured in the kernel; this loop only has to sleep
// again on time. It allocates nothing and makes no call that could block in
// the Go runtime (syscall.Syscall lets the runtime reuse the P while asleep).
func (w *worker) loop(stop *atomic.Bool) {
	const clockMonotonic, timerAbstime = 1, 1
	var ts unix.Timespec
	next := nanotime() + w.period
	for {
		ts.Sec, ts.Nsec = next/1e9, next%1e9
		_, _, e := unix.Syscall6(unix.SYS_CLOCK_NANOSLEEP, clockMonotonic, timerAbstime,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		w.cycles.Add(1)
		if stop.Load() {
			return
		}
		next += w.period
		if now := nanotime(); now >= next {
			// Woke more than a period late: the periods that already
			// passed are missed samples, as cyclictest's overruns.
			k := (now-next)/w.period + 1
			w.missed.Add(uint64(k))
			next += k * w.period
		}
	}
}

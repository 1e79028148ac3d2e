package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ipiSlice is the load's sampling period: its throughput is also given as
// the 90th percentile of the slices' rates, the rate while nothing else
// took its CPUs. On the shared 2-vCPU VM a 5 s run's 50 ms slices ranged
// from 2k to 99k ops/s: other tasks and the host take the CPUs for tens of
// ms, and the total over the run moved 2-10x between repetitions.
const ipiSlice = 20 * time.Millisecond

// ipiCounter is one load thread's count of operations, alone on its cache
// line so that the two CPUs' counters do not bounce one line.
type ipiCounter struct {
	n atomic.Int64
	_ [56]byte
}

// ipiLoadRun is a running load: its threads stop when stop is set.
type ipiLoadRun struct {
	stop    atomic.Bool
	ctr     [2]ipiCounter
	wg      sync.WaitGroup
	ready   sync.WaitGroup // the sending threads pinned, their tids known
	senders [2]atomic.Int64
}

// sending registers the calling thread as a sender: the time it is on its
// CPU divides the load's ops (ipiLoadRun.cpuTime).
func (l *ipiLoadRun) sending(i int) {
	l.senders[i].Store(int64(unix.Gettid()))
	l.ready.Done()
}

// cpuTime is the sending threads' time on their CPUs, in seconds (their
// CLOCK_THREAD_CPUTIME_ID clocks, made from their tids as glibc's
// pthread_getcpuclockid does: CPUCLOCK_SCHED, per thread).
func (l *ipiLoadRun) cpuTime() float64 {
	var sum float64
	for i := range l.senders {
		tid := l.senders[i].Load()
		if tid == 0 {
			continue
		}
		var ts unix.Timespec
		if unix.ClockGettime(int32(^tid<<3|6), &ts) == nil {
			sum += float64(ts.Nano()) / 1e9
		}
	}
	return sum
}

// runIPILoad is the "ipiload MODE DURATION" process. Modes mprotect and
// membarrier are one-way (startOneWay), perfcall two-way (startPerfCall).
// It prints "slice-p90 R" (the 90th percentile of the 20 ms slices' ops
// a second), "cpu-seconds C" (the sending threads' time on their CPUs) and,
// last, "ops N seconds S".
func runIPILoad(args []string) {
	d, err := time.Duration(0), error(nil)
	if len(args) == 2 {
		d, err = time.ParseDuration(args[1])
	}
	if len(args) != 2 || err != nil || d <= 0 || !isIPILoad(args[0]) {
		fmt.Fprintln(os.Stderr, "usage: bench ipiload mprotect|membarrier|perfcall DURATION")
		os.Exit(2)
	}
	l := &ipiLoadRun{}
	if args[0] == "perfcall" {
		err = l.startPerfCall()
	} else {
		err = l.startOneWay(args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench ipiload:", err)
		os.Exit(1)
	}
	ops, secs, p90, cpu := l.sample(d)
	l.stop.Store(true)
	l.wg.Wait()
	fmt.Printf("slice-p90 %.0f\ncpu-seconds %.4f\nops %d seconds %.3f\n", p90, cpu, ops, secs)
}

func isIPILoad(mode string) bool {
	for _, m := range ipiLoads {
		if m == mode {
			return true
		}
	}
	return false
}

// startOneWay starts a thread on CPU 1 spinning on a page of the process
// (so that CPU 1 runs the mm, and is not skipped as lazy), and one on CPU 0
// that sends it IPIs as fast as it can, each waited for: mode mprotect
// write-protects and unprotects the page (a TLB shootdown a pair),
// membarrier calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (a function
// call to each CPU running the process). Either sends only while CPU 1
// runs the spinner: its rate follows how much of CPU 1 the spinner gets.
func (l *ipiLoadRun) startOneWay(mode string) error {
	page, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err == nil && mode == "membarrier" {
		err = membarrier(memRegisterPrivateExpedited)
	}
	if err != nil {
		return err
	}
	page[0] = 1
	l.wg.Add(2)
	l.ready.Add(1)
	go func() {
		defer l.wg.Done()
		pinAs(1, ipiSpinnerComm)
		var sink byte
		for !l.stop.Load() {
			sink += page[64]
		}
		_ = sink
	}()
	go func() {
		defer l.wg.Done()
		pinAs(0, ipiSenderComm)
		time.Sleep(10 * time.Millisecond) // the spinner on CPU 1
		l.sending(0)
		for !l.stop.Load() {
			if mode == "membarrier" {
				_ = membarrier(memPrivateExpedited)
			} else {
				page[0]++
				_ = unix.Mprotect(page, unix.PROT_READ)
				_ = unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE)
			}
			l.ctr[0].n.Add(1)
		}
	}()
	return nil
}

// startPerfCall starts a thread on each of CPUs 0 and 1 that disables and
// enables, in a loop, a software perf event bound to the other CPU: the
// kernel changes a CPU-bound event on its CPU (cpu_function_call), so each
// ioctl is a function-call IPI to the other CPU, waited for (one op). Both
// CPUs send and receive, whatever task the target runs: no spinner whose
// share of its CPU caps the rate, no lock between the two senders
// (two-way membarrier calls serialize on the kernel's membarrier_ipi_mutex
// and reached 7k-52k IPIs/s here; two-way mprotect on the mmap lock,
// 0.8k-84k). The dummy event has no timer or counter to start or stop.
func (l *ipiLoadRun) startPerfCall() error {
	var fds [2]int
	for cpu := range fds {
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_DUMMY,
			Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{}))}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return fmt.Errorf("perf_event_open(dummy, cpu %d): %w", cpu, err)
		}
		fds[cpu] = fd
	}
	l.wg.Add(2)
	l.ready.Add(2)
	for cpu := range fds {
		go func() {
			defer l.wg.Done()
			pinAs(cpu, ipiPeerComm)
			l.sending(cpu)
			other := fds[1-cpu]
			for !l.stop.Load() {
				for _, req := range []uint{unix.PERF_EVENT_IOC_DISABLE, unix.PERF_EVENT_IOC_ENABLE} {
					if unix.IoctlSetInt(other, req, 0) == nil {
						l.ctr[cpu].n.Add(1)
					}
				}
			}
		}()
	}
	return nil
}

// sample counts the load's ops over d after a warm-up slice, in slices of
// ipiSlice: the ops, the seconds, the 90th percentile of the slices' rates
// (ops a second) and the sending threads' CPU seconds.
func (l *ipiLoadRun) sample(d time.Duration) (int64, float64, float64, float64) {
	total := func() int64 { return l.ctr[0].n.Load() + l.ctr[1].n.Load() }
	l.ready.Wait()
	time.Sleep(ipiSlice) // the threads running
	t0, n0, c0 := time.Now(), total(), l.cpuTime()
	prevT, prevN := t0, n0
	var rates []float64
	for time.Since(t0) < d {
		time.Sleep(ipiSlice)
		t, n := time.Now(), total()
		rates = append(rates, float64(n-prevN)/t.Sub(prevT).Seconds())
		prevT, prevN = t, n
	}
	return prevN - n0, prevT.Sub(t0).Seconds(), percentile(rates, 0.9), l.cpuTime() - c0
}

// percentile is the q-quantile of v (the nearest rank below), 0 if empty.
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1))]
}

// membarrier(2) commands (linux/membarrier.h).
const (
	memPrivateExpedited         = 1 << 3
	memRegisterPrivateExpedited = 1 << 4
)

func membarrier(cmd uintptr) error {
	if _, _, e := unix.Syscall(unix.SYS_MEMBARRIER, cmd, 0, 0); e != 0 {
		return fmt.Errorf("membarrier(%d): %w", cmd, e)
	}
	return nil
}

// pinAs locks the goroutine to its thread, pins it on cpu and names it.
func pinAs(cpu int, comm string) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	_ = unix.SchedSetaffinity(0, &set)
	if name, err := unix.BytePtrFromString(comm); err == nil {
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0)
	}
}

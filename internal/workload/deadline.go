package workload

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// deadlineBatch is how many jobs YieldJobs runs between two checks of
// Stopping: 32 jobs of a 5 ms period are 160 ms.
const deadlineBatch = 32

// YieldJobs runs the jobs of a SCHED_DEADLINE thread (the caller, already
// DEADLINE) until the group stops: job n does heavy of CPU time when every
// > 0 and n%every == every-1, else work, then calls sched_yield(), which
// ends the job (the kernel throttles the thread until its next period).
// It returns the jobs and heavy jobs run. The batches stay in the
// runtime's system-call state: each return to Go may sleep on a futex for
// its P (taken while the thread was throttled: 50 sleeps a second with
// Work), and the kernel gives a DEADLINE task woken that late a new
// deadline, a job of its own.
func (t *Thread) YieldJobs(work, heavy time.Duration, every int64) (jobs, heavies int64) {
	for !t.Stopping() {
		if t.yieldsP.Load() {
			entersyscallblock()
		} else {
			entersyscall()
		}
		heavies += yieldBatch(&t.ts, int64(work), int64(heavy), every, jobs)
		exitsyscall()
		jobs += deadlineBatch
	}
	return jobs, heavies
}

// yieldBatch runs deadlineBatch jobs from job n0 and returns how many were
// heavy. Between entersyscall and exitsyscall: nosplit.
//
//go:nosplit
func yieldBatch(ts *unix.Timespec, work, heavy, every, n0 int64) int64 {
	var heavies int64
	for n := n0; n < n0+deadlineBatch; n++ {
		d := work
		if every > 0 && n%every == every-1 {
			d, heavies = heavy, heavies+1
		}
		unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(ts)), 0) //nolint:errcheck // a valid pointer cannot fail
		spinUntilClock(ts, unix.CLOCK_THREAD_CPUTIME_ID, int64(ts.Sec)*1e9+int64(ts.Nsec)+d)
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) //nolint:errcheck // sched_yield cannot fail
	}
	return heavies
}

package session

import (
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// heapReserveMax is the most address space a session maps for its heap
// before it attaches: above the Go heap's peak at 1000 tracked threads
// (116 MiB mapped while watch's final report is built, strace of a 15 s
// watch beside stress-ng --switch 2).
const heapReserveMax = 128 << 20

// reserveHeap maps Go heap for a session's run before it starts, so that
// the run, and above all its stop, grows the heap within memory already
// mapped, without an mmap. Growing the heap is an mmap that extends the
// heap's mapping, which waits for the process's anon_vma lock; on a cloud
// VM whose kernel runs DAMON proactive reclaim (kdamond, the paddr
// "pageout" scheme), kdamond walks every process's pages holding those
// locks and yields the CPU inside the walk. Beside stress-ng --switch 2
// and 1000 tracked threads rtscope's mmaps waited there 1-2.9 s (the
// thread in D state in vma_prepare, kdamond runnable in rmap_walk_anon),
// in 4 of ~50 stops: the flight recorder wrapped unread meanwhile, and
// those stops took 1.4-2.9 s. With kdamond off, none in 12.
//
// The reservation is one large allocation, dropped at once and returned
// to the kernel (debug.FreeOSMemory): its pages are never touched, so it
// costs no resident memory, and the heap keeps the mapping, reused later
// without a system call. It is at most an eighth of the machine's RAM, so
// a small board under strict overcommit is not refused the commit charge.
func reserveHeap() {
	// Live until KeepAlive: an allocation the compiler cannot drop.
	runtime.KeepAlive(make([]byte, heapReserve(ramBytes())))
	debug.FreeOSMemory()
}

// ramBytes is the machine's RAM (0: unknown).
func ramBytes() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// heapReserve is the reservation on a machine of ram bytes (0: unknown).
func heapReserve(ram uint64) int {
	if ram > 0 && ram/8 < heapReserveMax {
		return int(ram / 8)
	}
	return heapReserveMax
}

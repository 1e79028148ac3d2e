package session

import (
	"runtime"
	"testing"
)

// TestReserveHeapMapsAhead: after reserveHeap the heap holds the
// reservation as mapped memory returned to the kernel (no resident cost),
// and allocating half of it maps nothing more (no mmap while a session
// runs).
func TestReserveHeapMapsAhead(t *testing.T) {
	var before, after, used runtime.MemStats
	runtime.ReadMemStats(&before)
	reserveHeap()
	runtime.ReadMemStats(&after)
	n := uint64(heapReserve(ramBytes()))
	if after.HeapSys < before.HeapSys+n/2 {
		t.Fatalf("heap mapped %d more bytes after reserveHeap, want about %d", int64(after.HeapSys)-int64(before.HeapSys), n)
	}
	if after.HeapReleased < n*3/4 {
		t.Errorf("heap released to the kernel: %d bytes, want at least %d (the reservation must not stay resident)", after.HeapReleased, n*3/4)
	}
	// Half the reservation in blocks a session allocates (64 KiB), kept live.
	keep := make([][]byte, 0, n/2/(64<<10)+1)
	for total := uint64(0); total < n/2; total += 64 << 10 {
		keep = append(keep, make([]byte, 64<<10))
	}
	runtime.ReadMemStats(&used)
	// Without the reservation the heap grows by the whole allocation. The
	// runtime's own small spans may still map a page or a few: CI saw
	// 32 KiB once (of 64 MiB allocated), so up to 1 MiB is not the
	// allocation's.
	if grown := int64(used.HeapSys) - int64(after.HeapSys); grown > 1<<20 {
		t.Errorf("allocating %d bytes after reserveHeap mapped %d more bytes of heap, want none of it", n/2, grown)
	}
	runtime.KeepAlive(keep)
}

// TestHeapReserveBoundedByRAM: at most an eighth of a small board's RAM.
func TestHeapReserveBoundedByRAM(t *testing.T) {
	for _, c := range []struct {
		ram  uint64
		want int
	}{
		{0, heapReserveMax},
		{24 << 30, heapReserveMax},
		{1 << 30, 128 << 20},
		{512 << 20, 64 << 20},
	} {
		if got := heapReserve(c.ram); got != c.want {
			t.Errorf("heapReserve(%d) = %d, want %d", c.ram, got, c.want)
		}
	}
}

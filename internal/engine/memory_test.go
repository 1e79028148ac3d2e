package engine

import (
	"testing"
	"unsafe"
)

// TestDefaultFlightFor: 8192 events per CPU up to 2 CPUs, then halved as the
// CPUs double (the rings stay within DefaultFlightBytes), never below 2048.
func TestDefaultFlightFor(t *testing.T) {
	for ncpu, want := range map[int]uint32{1: 8192, 2: 8192, 3: 4096, 4: 4096, 8: 2048, 64: 2048} {
		if got := DefaultFlightFor(ncpu); got != want {
			t.Errorf("DefaultFlightFor(%d) = %d, want %d", ncpu, got, want)
		}
		if err := CheckFlightPerCPU(DefaultFlightFor(ncpu)); err != nil {
			t.Errorf("DefaultFlightFor(%d): %v", ncpu, err)
		}
	}
}

// TestTaskStatsSize: a tracked task's statistics (the stats hash value)
// within 5 KiB, so that 100 tasks take about 0.5 MiB (issue 12; 272 32-bit
// buckets a metric made it 12 KiB).
func TestTaskStatsSize(t *testing.T) {
	if n := unsafe.Sizeof(TaskStats{}); n > 5120 {
		t.Errorf("TaskStats takes %d bytes, above 5120", n)
	}
}

// TestHistogramFold: counts kept after halvings are scaled back by the
// number of folds.
func TestHistogramFold(t *testing.T) {
	var m MetricStats
	m.Hist[3], m.Hist[10], m.HistShift = 7, 65535, 2
	h := m.Histogram()
	if h[3] != 28 || h[10] != 65535<<2 || h[0] != 0 {
		t.Errorf("histogram %v %v %v, want 28 %d 0", h[3], h[10], h[0], 65535<<2)
	}
}

package watch

import "github.com/rtscope/rtscope/internal/metric"

// LiveWindowsPerMetric bounds the worst-case windows live tasks hold, per
// metric: only the maxima among the largest this many of a metric are cut.
// Cutting every task's every new maximum made user space scale with the
// number of tasks, not with what users read: at 1000 tracked threads waking
// once a second it took 49-57% of a CPU, 253-397 MiB of RSS and 4.6-10.9 s
// to stop (bench, scaling phase). With few tasks nothing changes: each one
// keeps the window of each of its maxima, and the worst case of each metric
// always keeps its own.
const LiveWindowsPerMetric = 16

// liveWindows says which (task, metric) windows to cut: those of the
// PerMetric largest maxima of each metric among live tasks. Not safe for
// concurrent use (the session's goroutine only).
type liveWindows struct {
	PerMetric int
	held      map[metric.ID]map[uint64]uint64 // metric -> task id -> value of its window
	NotKept   uint64                          // maxima whose window was not cut, or released for a larger one
}

// admit tells whether the window of task id's new maximum v of m is to be
// cut. When it is and the bound is reached, the smallest held window of m
// is released: its task id is returned with evicted true.
func (l *liveWindows) admit(id uint64, m metric.ID, v uint64) (cut bool, evicted uint64, ok bool) {
	if l.held == nil {
		l.held = map[metric.ID]map[uint64]uint64{}
	}
	h := l.held[m]
	if h == nil {
		h = map[uint64]uint64{}
		l.held[m] = h
	}
	if _, in := h[id]; in || len(h) < max(l.PerMetric, 1) {
		h[id] = v
		return true, 0, false
	}
	minID, minV := uint64(0), ^uint64(0)
	for tid, tv := range h {
		if tv < minV || (tv == minV && tid > minID) {
			minID, minV = tid, tv
		}
	}
	l.NotKept++
	if v <= minV {
		// Ties keep the earlier window.
		return false, 0, false
	}
	delete(h, minID)
	h[id] = v
	return true, minID, true
}

// holds tells whether task id's maximum of m holds a window.
func (l *liveWindows) holds(id uint64, m metric.ID) bool {
	_, in := l.held[m][id]
	return in
}

// forget drops task id (it exited: its windows are decoded into its report).
func (l *liveWindows) forget(id uint64) {
	for _, h := range l.held {
		delete(h, id)
	}
}

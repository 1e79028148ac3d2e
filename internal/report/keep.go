package report

import (
	"container/heap"
	"fmt"

	"github.com/rtscope/rtscope/internal/units"
)

// WindowKeeper bounds the decoded windows that exited tasks hold until the
// final report. A decoded window is up to --trace-max-events events (about
// 300 KB at the default 1024), and every task that ran has at least one (its
// first sample is a new maximum), so a workload of short-lived threads grew
// without bound: per metric, only the PerMetric largest windows of exited
// tasks (worst cases and violation examples alike) are kept, the others are
// released and counted in Dropped, with a note on the worst case that lost
// its window. Each metric's largest window of the run is always kept; the
// tasks' statistics, verdicts and causes are kept whole. Not safe for
// concurrent use: the session's goroutine owns it.
type WindowKeeper struct {
	PerMetric int    // windows kept per metric; at least 1
	Dropped   uint64 // windows released so far
	kept      map[string]*keptHeap
}

// keptWindow is one window held, and how to release it.
type keptWindow struct {
	value   uint64
	release func()
}

// keptHeap is a min-heap on value: its root is the first to go.
type keptHeap []keptWindow

func (h keptHeap) Len() int           { return len(h) }
func (h keptHeap) Less(i, j int) bool { return h[i].value < h[j].value }
func (h keptHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keptHeap) Push(x any)        { *h = append(*h, x.(keptWindow)) }
func (h *keptHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Keep takes the windows of t, an exited task whose final report is built,
// and releases whatever is beyond the bound (of t or of earlier tasks).
func (k *WindowKeeper) Keep(t *Task) {
	if k.kept == nil {
		k.kept = map[string]*keptHeap{}
	}
	for name, m := range t.Metrics {
		if m.Worst != nil {
			m := m
			k.add(name, m.Worst.Value, func() {
				m.WorstNote = fmt.Sprintf("the window of this maximum (%s us) was released when the task exited: "+
					"exited tasks keep the %d largest windows of each metric", units.Us(m.Worst.Value), k.PerMetric)
				m.Worst = nil
			})
		}
		if m.ViolationCauses == nil {
			continue
		}
		for _, c := range m.ViolationCauses.Causes {
			if ex := c.Example; ex != nil && ex.Window != nil {
				k.add(name, ex.ValueNs, func() { ex.Window = nil })
			}
		}
	}
}

func (k *WindowKeeper) add(metric string, value uint64, release func()) {
	h := k.kept[metric]
	if h == nil {
		h = &keptHeap{}
		k.kept[metric] = h
	}
	limit := max(k.PerMetric, 1)
	if h.Len() >= limit {
		if (*h)[0].value >= value {
			// Not larger than any kept: the new one goes (ties keep the earlier).
			release()
			k.Dropped++
			return
		}
		heap.Pop(h).(keptWindow).release()
		k.Dropped++
	}
	heap.Push(h, keptWindow{value, release})
}

// Len is the number of windows held.
func (k *WindowKeeper) Len() int {
	n := 0
	for _, h := range k.kept {
		n += h.Len()
	}
	return n
}

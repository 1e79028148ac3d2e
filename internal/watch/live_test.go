package watch

import (
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
)

// TestLiveWindowsKeepTheLargest: of many tasks' maxima, only the largest
// PerMetric of each metric hold a window, a task already holding one
// always gets its new maximum cut, and the smallest is released for a
// larger one.
func TestLiveWindowsKeepTheLargest(t *testing.T) {
	l := liveWindows{PerMetric: 3}
	m := metric.ID(0)
	for id := uint64(1); id <= 3; id++ {
		if cut, _, ev := l.admit(id, m, 100*id); !cut || ev {
			t.Fatalf("task %d: cut %v evicted %v below the bound", id, cut, ev)
		}
	}
	if cut, _, _ := l.admit(4, m, 100); cut {
		t.Error("a maximum equal to the smallest held was cut (ties keep the earlier)")
	}
	if cut, _, ev := l.admit(1, m, 150); !cut || ev {
		t.Errorf("a task holding a window: its new maximum cut %v, evicted %v", cut, ev)
	}
	cut, ev, evicted := l.admit(5, m, 1000)
	if !cut || !evicted || ev != 1 {
		t.Errorf("a larger maximum: cut %v, evicted task %d (%v), want task 1 (150) released", cut, ev, evicted)
	}
	if cut, _, _ := l.admit(6, metric.ID(1), 1); !cut {
		t.Error("another metric's bound was shared")
	}
	l.forget(5)
	if cut, _, ev := l.admit(7, m, 1); !cut || ev {
		t.Errorf("after an exit freed a place: cut %v evicted %v", cut, ev)
	}
	if l.NotKept != 2 {
		t.Errorf("NotKept %d, want 2 (one refused, one released)", l.NotKept)
	}
}

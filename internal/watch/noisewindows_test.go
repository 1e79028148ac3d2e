package watch

import (
	"errors"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/sched"
)

// A noise maximum of a task that is gone when its notice is read (one
// recorded at its exit) is judged by the policy the engine recorded:
// oslat's FIFO 1 worker, throttled 52 ms to its end, lost its window as
// "SCHED_OTHER" when only the syscall was asked.
func TestNoiseWindowsOfGoneTask(t *testing.T) {
	const gone = 0x3ffffff0 // above pid_max: no such task
	n := engine.Notice{Type: uint32(engine.NoticeNewMax), Metric: uint32(metric.Noise), Id: 7, Tid: gone}
	for _, c := range []struct {
		name   string
		policy uint32
		err    error
		want   bool
	}{
		{"recorded FIFO", sched.FIFO, nil, true},
		{"recorded DEADLINE", sched.Deadline, nil, true},
		{"recorded OTHER", 0, nil, false},
		{"not recorded", 0, errors.New("no statistics"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			nw := newNoiseWindows()
			got := nw.wants(n, func(id uint64) (uint32, error) {
				if id != n.Id {
					t.Errorf("asked for %d, want %d", id, n.Id)
				}
				return c.policy, c.err
			})
			if got != c.want || nw.rejected[n.Id] == c.want {
				t.Errorf("wants %v (rejected %v), want %v", got, nw.rejected[n.Id], c.want)
			}
		})
	}
}

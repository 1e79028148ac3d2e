package watch

import (
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
)

// statsShared is how long the statistics read by one periodic job (live
// table, series, tick, housekeeping) serve the others: at their default
// period of a second they run at the same wake, and each read copies 7 KB
// a task out of the kernel (0.7 MB and about 1 ms at 100 tasks,
// BenchmarkAgentReads), up to four times a second before.
const statsShared = 100 * time.Millisecond

// seriesInterval is the resolution of the series over time (Options.Series).
const seriesInterval = time.Second

// statsCache is the periodic jobs' shared read of every tracked task's
// statistics (the sweep for lost notices reads its own).
type statsCache struct {
	all  []*engine.TaskStats
	read time.Time
}

// get returns the statistics, read at most statsShared ago. The slice is
// shared: callers do not modify it.
func (c *statsCache) get(e *engine.Engine) ([]*engine.TaskStats, error) {
	if c.read.IsZero() || time.Since(c.read) >= statsShared {
		all, err := e.AllStats()
		if err != nil {
			return nil, err
		}
		c.all, c.read = all, time.Now()
	}
	return c.all, nil
}

// stale makes the next get read afresh.
func (c *statsCache) stale() { c.read = time.Time{} }

// series records each task's metrics over time (Options.Series), one
// point a seriesInterval.
type series struct {
	started  time.Time
	samplers map[uint64]map[metric.ID]*report.Sampler
}

// sample adds the interval ending now to the series of one task's metrics
// that have samples.
func (s *series) sample(st *engine.TaskStats) {
	t := uint64(time.Since(s.started))
	for _, m := range metric.All() {
		if st.M[m].Count == 0 {
			continue
		}
		if s.samplers[st.Id] == nil {
			s.samplers[st.Id] = map[metric.ID]*report.Sampler{}
		}
		sp := s.samplers[st.Id][m]
		if sp == nil {
			sp = report.NewSampler(uint64(seriesInterval))
			s.samplers[st.Id][m] = sp
		}
		sp.Add(t, report.MetricStats(st, m))
	}
}

// of returns task id's series of m (nil: none).
func (s *series) of(id uint64, m metric.ID) *report.Series {
	if s == nil {
		return nil
	}
	return s.samplers[id][m].Series()
}

// forget drops task id's samplers.
func (s *series) forget(id uint64) {
	if s != nil {
		delete(s.samplers, id)
	}
}

// tick hands the statistics of the live tasks to the agent's observer.
func (s *watcher) tick() {
	all, err := s.stats.get(s.eng)
	if err != nil {
		return
	}
	live := make([]*engine.TaskStats, 0, len(all))
	for _, st := range all {
		if !s.book.final[st.Id] {
			live = append(live, st)
		}
	}
	s.obs.Tick(s.eng, live, s.win.lost)
}

// sampleSeries adds a point to the series of every live task.
func (s *watcher) sampleSeries() {
	all, err := s.stats.get(s.eng)
	if err != nil {
		return
	}
	for _, st := range all {
		if !s.book.final[st.Id] {
			s.series.sample(st)
		}
	}
}

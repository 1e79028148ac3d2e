package watch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/trace"
)

// book is the target book: which tasks are tracked and why (the target
// spec they matched), each one's latest report, whether it ended, and
// which of them the report shows and judges (sel). Session goroutine only.
type book struct {
	spec    target.Spec
	eng     *engine.Engine // from Attached
	sel     *report.Selection
	tasks   map[uint64]*report.Task // by tracking id, live and exited
	final   map[uint64]bool         // ended: its report is final
	leaders map[uint32]string       // the name of each process's first thread, by pid
	slack   map[uint64]slackRead    // timer slack of each task (slackOf)
	// everTracked: some task was tracked (gone).
	everTracked bool
}

// newBook books the targets of spec; sel (with spec's --tid, --comm and
// --pid) chooses the tasks shown.
func newBook(spec target.Spec, sel report.Selection) *book {
	sel.TIDs, sel.Comms, sel.Leaders = spec.TIDs, spec.Comms, append(sel.Leaders, spec.PIDs...)
	return &book{spec: spec, sel: &sel, tasks: map[uint64]*report.Task{}, final: map[uint64]bool{},
		leaders: map[uint32]string{}, slack: map[uint64]slackRead{}}
}

// register registers the targets in the engine, numbered by kind in the
// order tids, pids, comms, cgroups (the control API relies on it); it
// returns the next number, for the launched command.
func (b *book) register(e *engine.Engine) (uint32, error) {
	idx := uint32(0)
	for _, tid := range b.spec.TIDs {
		if err := e.WantTID(uint32(tid), idx, 0); err != nil {
			return 0, fmt.Errorf("--tid %d: %w", tid, err)
		}
		idx++
	}
	for _, pid := range b.spec.PIDs {
		if err := e.WantTGID(uint32(pid), idx); err != nil {
			return 0, fmt.Errorf("--pid %d: %w", pid, err)
		}
		idx++
	}
	for _, c := range b.spec.Comms {
		if err := e.WantComm(c, idx); err != nil {
			return 0, fmt.Errorf("--comm %s: %w", c, err)
		}
		idx++
	}
	for _, c := range b.spec.Cgroups {
		_, id, err := target.Cgroup(c)
		if err == nil {
			err = e.WantCgroup(id, idx)
		}
		if err != nil {
			return 0, fmt.Errorf("--cgroup %s: %w", c, err)
		}
		idx++
	}
	return idx, nil
}

// started notes a task whose start notice was read.
func (b *book) started(id uint64, tid uint32) {
	if _, ok := b.tasks[id]; !ok {
		b.tasks[id] = report.Placeholder(id, tid)
	}
}

// learn adds a task found by its statistics (its start notice was lost),
// and tells whether it was new.
func (b *book) learn(st *engine.TaskStats) bool {
	if _, ok := b.tasks[st.Id]; ok {
		return false
	}
	t := report.FromStats(st)
	b.slackOf(t)
	b.keep(t)
	return true
}

// update replaces the reports of the live tasks by their statistics.
func (b *book) update(all []*engine.TaskStats, names *trace.Names) {
	for _, st := range all {
		if b.final[st.Id] {
			continue
		}
		t := report.FromStats(st)
		b.slackOf(t)
		names.SetComm(st.Tid, t.Comm)
		b.keep(t)
	}
}

// identify returns the task of tracking id (tid: its thread): known, or
// read from its statistics when only its start notice was seen.
func (b *book) identify(e *engine.Engine, id uint64, tid uint32) *report.Task {
	t := b.tasks[id]
	if t == nil || t.Comm == "" {
		if st, err := e.Stats(id); err == nil {
			t := report.FromStats(st)
			b.slackOf(t)
			return t
		}
		if t == nil {
			return report.Placeholder(id, tid)
		}
	}
	return t
}

// keep keeps t's latest report, and its name when it is its process's
// first thread.
func (b *book) keep(t *report.Task) {
	b.tasks[t.ID()] = t
	if t.TID == t.PID && t.Comm != "" {
		b.leaders[t.PID] = t.Comm
	}
}

// ended keeps the final report of an exited task: the end of the run
// reports it with the others (report.WriteFinal).
func (b *book) ended(t *report.Task) {
	b.keep(t)
	b.final[t.ID()] = true
}

// leader returns the name of the first thread of process pid: booked, read
// from its statistics (tracked, not read yet), or from /proc while it runs
// ("" when gone unseen). A Go program's threads exit with it, in any order:
// the name must not depend on /proc then.
func (b *book) leader(pid uint32) string {
	if c, ok := b.leaders[pid]; ok {
		return c
	}
	for id, t := range b.tasks {
		if t.TID != pid {
			continue
		}
		if t.Comm == "" && b.eng != nil {
			t = b.identify(b.eng, id, t.TID)
		}
		if t.Comm != "" {
			b.leaders[pid] = t.Comm
			return t.Comm
		}
	}
	c, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	b.leaders[pid] = strings.TrimSpace(string(c))
	return b.leaders[pid]
}

// judged tells whether t, which violated an SLO, is one of the judged
// tasks (report.Selection.Shows): on-threshold actions run for those only.
func (b *book) judged(t *report.Task) bool {
	return b.sel.Shows(t, b.leader(t.PID))
}

// drop forgets task id entirely (an agent's exited task).
func (b *book) drop(id uint64) {
	delete(b.tasks, id)
	delete(b.slack, id)
}

// forgetLeader forgets an exited process's first thread: its pid may be
// reused. Only an agent forgets: a watch's report still needs the name.
func (b *book) forgetLeader(tid uint32) { delete(b.leaders, tid) }

// shown returns the tasks the live table shows (all: every task),
// sorted: the selection without the causes, which only the final
// analyses name.
func (b *book) shown(all bool) []*report.Task {
	r := &report.Report{}
	for _, t := range b.tasks {
		if all || b.sel.Base(t, b.leader(t.PID)) {
			r.Tasks = append(r.Tasks, t)
		}
	}
	r.Sort()
	return r.Tasks
}

// gone tells whether every target is gone, so that watching ends by
// itself: names may appear at any time and tasks enter cgroups, so
// --comm and --cgroup never end; a launched command ends with its end.
func (b *book) gone(cmdRunning bool) bool {
	if len(b.tasks) > 0 {
		b.everTracked = true
	}
	if len(b.spec.Comms) > 0 || len(b.spec.Cgroups) > 0 || cmdRunning {
		return false
	}
	for _, pid := range b.spec.PIDs {
		if target.Alive(pid) {
			return false
		}
	}
	for _, t := range b.tasks {
		if !t.Exited {
			return false
		}
	}
	if len(b.spec.TIDs) > 0 && !b.everTracked {
		for _, tid := range b.spec.TIDs {
			if target.Alive(tid) {
				return false
			}
		}
	}
	return true
}

// slackRead is a task's timer slack and the policy changes it was read at.
type slackRead struct {
	ns      *uint64
	changes uint32
}

// slackOf sets t's timer slack: read from /proc/TID/timerslack_ns when the
// task is first seen alive, and again after its policy changed (the kernel
// zeroes an RT task's slack and restores it when it leaves RT); an exited
// task keeps the last value read.
func (b *book) slackOf(t *report.Task) {
	r, ok := b.slack[t.ID()]
	if (!ok || r.changes != t.SchedChanges) && !t.Exited {
		if v, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", t.TID)); err == nil {
			if ns, err := strconv.ParseUint(strings.TrimSpace(string(v)), 10, 64); err == nil {
				r = slackRead{ns: &ns, changes: t.SchedChanges}
				b.slack[t.ID()] = r
			}
		}
	}
	t.TimerSlackNs = r.ns
}

// sweepEvery is how often sweep looks at the lost-notice counter, and
// at most how often it scans every task's statistics (a full scan).
const sweepEvery = 500 * time.Millisecond

// sweep finds what notices could not say (the notice ring was full): tasks
// never announced, and exits never announced.
func (s *watcher) sweep(force bool) error {
	if !force && time.Since(s.lastSweep) < sweepEvery {
		// Not the lost-notice counter either: its per-CPU lookup at every
		// poll was 3% of the agent's CPU at 400,000 switches a second.
		return nil
	}
	lost := s.eng.Counter(engine.CounterNoticeLost)
	if lost == s.lostSeen {
		s.lastSweep = time.Now() // looked: the next look in sweepEvery
		return nil
	}
	s.lostSeen, s.lastSweep = lost, time.Now()
	all, err := s.eng.AllStats()
	if err != nil {
		return err
	}
	for _, st := range all {
		s.book.learn(st)
		if st.Exited != 0 && !s.book.final[st.Id] {
			s.finish(st.Id)
		}
	}
	return nil
}

// finish prints the final report of an exited task and frees its statistics.
func (s *watcher) finish(id uint64) {
	if s.book.final[id] {
		return
	}
	st, err := s.eng.Stats(id)
	if err != nil {
		return
	}
	s.win.exiting(st.Tid)
	s.obs.Exit(st)
	if s.agent != nil {
		// Nothing of it is kept: churn must not grow the agent's memory.
		s.book.drop(id)
		s.book.forgetLeader(st.Tid)
		s.win.forget(id)
		s.viol.forget(id)
		s.eng.Forget(id)
		// Not final, as dropped: the statistics read before its exit must
		// not tick it again (the exporter would count it twice).
		s.stats.stale()
		return
	}
	t := report.FromStats(st)
	s.book.slackOf(t)
	if s.series != nil {
		s.series.sample(st) // its last interval
	}
	s.attach(t)
	s.series.forget(id) // in t now
	report.Judge(t)
	s.win.forget(id) // decoded into t
	s.eng.Forget(id)
	s.book.ended(t)
	// Ended: from now on only the run's report needs its windows, and
	// only the largest of them, whatever the number of tasks that exit.
	s.win.exited.Keep(t)
}

// refresh re-reads the statistics of live tasks.
func (s *watcher) refresh() {
	if all, err := s.stats.get(s.eng); err == nil {
		s.book.update(all, s.names)
	}
}

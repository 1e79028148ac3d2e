package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Selection says which tasks of a watch its report shows. The shown tasks
// are the judged tasks: one set makes the headlines, the exit status, the
// counters passed to actions (Violations) and the on-threshold actions
// (Shows). The others are hidden: still measured, kept in Report.Hidden,
// and shown with --all.
//
// By default a task is shown when the user named it (--tid, --comm; a
// --pid process, or a launched program that is not Go, names its first
// thread and its threads with a name of their own), when it ran
// with an RT or DEADLINE policy at any time (SchedSeen), when it has an
// SLO or a detected period, or when a shown task's worst-case analysis
// names it as the cause (the thread that ran instead, the lock owner or
// the middle-priority preempter of a priority inversion). A program's
// runtime threads are never shown unless named: the threads, never
// real-time, that carry their process's name (Go names none of its
// threads, so a Go program's runtime threads all carry the program's
// name), and the first thread of a Go program.
type Selection struct {
	All   bool     // --all: every task is shown
	Show  []string // --show: only the tasks of these names
	TIDs  []int    // --tid
	Comms []string // --comm
	// Leaders are processes whose first thread, and threads with a name
	// of their own, are named: --pid, and a launched program that is not
	// a Go program.
	Leaders []int
	// GoPIDs are the processes of a Go program (a launched one): their
	// first thread is the runtime's too.
	GoPIDs []int
}

// Base tells whether t is shown on its own, without a shown task naming
// it as a cause; leader is the name of the first thread of t's process
// ("" when unknown).
func (s *Selection) Base(t *Task, leader string) bool {
	switch {
	case s == nil || s.All:
		return true
	case len(s.Show) > 0:
		return slices.Contains(s.Show, t.Comm)
	case s.named(t, leader):
		return true
	case s.runtime(t, leader):
		return false
	}
	return everRT(t) || t.NominalPeriodNs != nil || hasSLO(t)
}

// Shows tells whether a task that violated an SLO (so has one) is shown:
// on-threshold actions run for shown tasks only.
func (s *Selection) Shows(t *Task, leader string) bool {
	switch {
	case s == nil || s.All:
		return true
	case len(s.Show) > 0:
		return slices.Contains(s.Show, t.Comm)
	}
	return s.named(t, leader) || !s.runtime(t, leader)
}

// named tells whether the user named t (leader: the name of its process's
// first thread).
func (s *Selection) named(t *Task, leader string) bool {
	if slices.Contains(s.TIDs, int(t.TID)) || slices.Contains(s.Comms, t.Comm) {
		return true
	}
	return slices.Contains(s.Leaders, int(t.PID)) && (t.TID == t.PID || (leader != "" && t.Comm != leader))
}

// runtime tells whether t is one of its program's runtime threads.
func (s *Selection) runtime(t *Task, leader string) bool {
	if everRT(t) {
		return false
	}
	if t.TID == t.PID {
		return slices.Contains(s.GoPIDs, int(t.PID))
	}
	return leader != "" && t.Comm == leader
}

// everRT tells whether t ran with an RT or DEADLINE policy at any time.
func everRT(t *Task) bool {
	rt := func(sched string) bool {
		return strings.HasPrefix(sched, "FIFO ") || strings.HasPrefix(sched, "RR ") || strings.HasPrefix(sched, "DEADLINE")
	}
	return rt(t.Sched) || slices.ContainsFunc(t.SchedSeen, rt)
}

// hasSLO tells whether some metric of t has an SLO.
func hasSLO(t *Task) bool {
	for _, m := range t.Metrics {
		if m.SLONs != nil {
			return true
		}
	}
	return false
}

// Leaders returns the name of the first thread of each process among
// tasks, by pid.
func Leaders(tasks []*Task) map[uint32]string {
	l := map[uint32]string{}
	for _, t := range tasks {
		if t.TID == t.PID && t.Comm != "" {
			l[t.PID] = t.Comm
		}
	}
	return l
}

// Select keeps in r.Tasks the tasks s shows and moves the others, in
// order, to r.Hidden. prepare (nil: none) is called on each task shown,
// before its analyses are read for the causes they name: watch decodes
// and explains its windows there, and only shown tasks pay for it.
func (s *Selection) Select(r *Report, prepare func(*Task)) {
	all := append(r.Tasks, r.Hidden...)
	leaders := Leaders(all)
	shown := make(map[*Task]bool, len(all))
	var todo []*Task
	for _, t := range all {
		if s.Base(t, leaders[t.PID]) {
			shown[t] = true
			todo = append(todo, t)
		}
	}
	byTID := map[uint32]*Task{}
	for _, t := range all {
		byTID[t.TID] = t
	}
	// The causes a shown task's analyses name are shown in turn, so the
	// culprit of a culprit is too (each task once).
	for len(todo) > 0 {
		t := todo[0]
		todo = todo[1:]
		if prepare != nil {
			prepare(t)
		}
		if s == nil || s.All || len(s.Show) > 0 {
			continue // every task, or only those named
		}
		for _, tid := range causes(t) {
			c := byTID[tid]
			if c != nil && !shown[c] && !s.runtime(c, leaders[c.PID]) {
				shown[c] = true
				todo = append(todo, c)
			}
		}
	}
	r.Tasks, r.Hidden = nil, nil
	for _, t := range all {
		if shown[t] {
			r.Tasks = append(r.Tasks, t)
		} else {
			r.Hidden = append(r.Hidden, t)
		}
	}
}

// causer is an analysis that names the threads that caused its window
// (internal/analysis.Result).
type causer interface{ CauseTIDs() []uint32 }

// culprits are the fields of an analysis that name the threads that
// caused its window, as its JSON writes them (a Decoded one).
type culprits struct {
	BlockingThread *struct {
		TID uint32 `json:"tid"`
	} `json:"blocking_thread"`
	Inversion *struct {
		Owner struct {
			TID uint32 `json:"tid"`
		} `json:"owner"`
		Preempters []struct {
			TID uint32 `json:"tid"`
		} `json:"preempters"`
	} `json:"priority_inversion"`
}

// causes returns the threads t's worst-case analyses name as causes: the
// thread that ran when t should have, and a priority inversion's lock
// owner and middle-priority preempters.
func causes(t *Task) []uint32 {
	var tids []uint32
	for _, name := range sortedMetrics(t) {
		switch a := t.Metrics[name].Analysis.(type) {
		case nil:
		case causer:
			tids = append(tids, a.CauseTIDs()...)
		default:
			tids = append(tids, decodedCauses(a)...)
		}
	}
	return tids
}

// decodedCauses reads the causes of an analysis report does not know the
// type of (a Decoded one) from its JSON fields.
func decodedCauses(a Analysis) []uint32 {
	b, err := json.Marshal(a)
	if err != nil {
		return nil
	}
	var c culprits
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	var tids []uint32
	if c.BlockingThread != nil {
		tids = append(tids, c.BlockingThread.TID)
	}
	if c.Inversion != nil {
		tids = append(tids, c.Inversion.Owner.TID)
		for _, p := range c.Inversion.Preempters {
			tids = append(tids, p.TID)
		}
	}
	return tids
}

// sortedMetrics returns t's metric names in order, so that causes are
// found in the same order every time.
func sortedMetrics(t *Task) []string {
	names := make([]string, 0, len(t.Metrics))
	for n := range t.Metrics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// writeHidden writes the line that stands for the hidden tasks: how many,
// whether any has a finding (an SLO violation, an RT policy), and how to
// list them.
func writeHidden(w io.Writer, r *Report) {
	if len(r.Hidden) == 0 {
		return
	}
	var violated, viol, rt int
	for _, t := range r.Hidden {
		v := 0
		for _, m := range t.Metrics {
			if m.Violations != nil {
				v += int(*m.Violations)
			}
		}
		if v > 0 {
			violated++
			viol += v
		}
		if everRT(t) {
			rt++
		}
	}
	var why []string
	if violated > 0 {
		why = append(why, fmt.Sprintf("%d with %d SLO violation(s), not judged", violated, viol))
	}
	if rt > 0 {
		why = append(why, fmt.Sprintf("%d real-time", rt))
	}
	if len(why) == 0 {
		why = append(why, "no finding")
	}
	of := ""
	if r.Command != nil {
		of = " of the command"
	}
	fmt.Fprintf(w, "rtscope watch: %d other task(s)%s not shown: %s; --all to list them\n", len(r.Hidden), of, strings.Join(why, ", "))
}

package watch

import (
	"os"
	"slices"
	"testing"

	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
)

// task is a report task of tracking id id, thread tid, named comm.
func task(id uint64, tid uint32, comm string, exited bool) *report.Task {
	t := report.Placeholder(id, tid)
	t.Comm, t.Exited = comm, exited
	return t
}

// TestBookShown: --show keeps the named tasks only, sorted as the report
// sorts them; all gives every task; by default a --pid process shows its
// first thread and its threads with names of their own, not a runtime
// thread named like the process.
func TestBookShown(t *testing.T) {
	fill := func(b *book) {
		b.keep(task(1, 11, "ctl", false))
		b.tasks[1].Sched = "FIFO 80"
		b.keep(task(2, 12, "logger", false))
		b.keep(task(3, 13, "ctl", true))
		b.keep(task(4, 10, "app", false)) // the process's first thread
		b.keep(task(5, 14, "app", false)) // a runtime thread
		for _, tk := range b.tasks {
			tk.PID = 10
		}
		b.leaders = map[uint32]string{10: "app"}
	}
	b := newBook(target.Spec{}, report.Selection{Show: []string{"ctl"}})
	fill(b)
	if got := b.shown(false); len(got) != 2 || got[0].Comm != "ctl" || got[1].Comm != "ctl" {
		t.Errorf("shown with --show ctl: %d tasks %v", len(got), got)
	}
	if got := b.shown(true); len(got) != 5 {
		t.Errorf("all: %d tasks, want 5", len(got))
	}
	b = newBook(target.Spec{Comms: []string{"logger"}, PIDs: []int{10}}, report.Selection{})
	fill(b)
	var got []uint32
	for _, tk := range b.shown(false) {
		got = append(got, tk.TID)
	}
	if !slices.Equal(got, []uint32{10, 11, 12, 13}) {
		t.Errorf("default: shown %v, want the --pid's first thread 10 and its threads with names of their own, not 14 named like it", got)
	}
	if b.judged(b.tasks[5]) || !b.judged(b.tasks[3]) {
		t.Error("a runtime thread is judged, or a task with a name of its own is not")
	}
}

// TestBookGone: a watch ends by itself once every task it tracked exited
// and its command ended, never with --comm (names may come back), and
// not before a --tid target that still lives was tracked.
func TestBookGone(t *testing.T) {
	b := newBook(target.Spec{}, report.Selection{})
	b.started(1, 11)
	if b.gone(false) {
		t.Error("gone while a task runs")
	}
	b.ended(task(1, 11, "a", true))
	if !b.gone(false) {
		t.Error("not gone once every task exited")
	}
	if b.gone(true) {
		t.Error("gone while the launched command runs")
	}
	comm := newBook(target.Spec{Comms: []string{"a"}}, report.Selection{})
	if comm.gone(false) {
		t.Error("--comm watch gone")
	}
	self := newBook(target.Spec{TIDs: []int{os.Getpid()}}, report.Selection{})
	if self.gone(false) {
		t.Error("gone before a living --tid target was tracked")
	}
	self.started(1, uint32(os.Getpid()))
	self.ended(task(1, uint32(os.Getpid()), "a", true))
	if !self.gone(false) {
		t.Error("not gone once the --tid target was tracked and exited")
	}
}

// TestBookLearn: a task found by the sweep is added once, and the
// report of an ended task is kept as final.
func TestBookLearnAndEnd(t *testing.T) {
	b := newBook(target.Spec{}, report.Selection{})
	b.started(4, 44)
	if b.tasks[4] == nil || b.tasks[4].TID != 44 {
		t.Fatalf("started task not booked: %+v", b.tasks[4])
	}
	b.ended(task(4, 44, "w", true))
	if !b.final[4] || b.tasks[4].Comm != "w" {
		t.Errorf("ended task: final %v, comm %q", b.final[4], b.tasks[4].Comm)
	}
	b.drop(4)
	if b.tasks[4] != nil {
		t.Error("dropped task still booked")
	}
}

package action

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks Parse on any --on-threshold/--on-end value: an accepted
// action has what its kind needs (a real signal and a target, a command)
// and nothing of another kind; a refused one gets one sentence that quotes
// what was given.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"trace", "trace,file=x.txt", "trace,file=", "signal,num=USR1,pid=parent", "signal,num=10,pid=1",
		"signal,num=0,pid=1", "signal,num=65,pid=1", "signal,num=SIGTERM,pid=-4", "signal,pid=1", "signal,num=9,pid=1,x=2",
		"shell,command=echo a,b", "shell,command= ", "shell", "continue", "continue,x", "", ",", "signal,num=kill,pid=99999999999999999999",
		"signal,num=9,pid=1,pid=parent", "signal,num=9,num=10,pid=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, strconv.Quote(s)) || strings.Contains(msg, "\n") {
				t.Fatalf("Parse(%q): error %q is not one line quoting the input", s, msg)
			}
			return
		}
		switch a.Kind {
		case Trace:
			if a.Signal != 0 || a.PID != 0 || a.Parent || a.Command != "" {
				t.Fatalf("Parse(%q) = %+v: a trace action with other fields", s, a)
			}
		case Signal:
			if a.Signal < 1 || a.Signal > 64 || (a.PID <= 0) == !a.Parent || a.File != "" || a.Command != "" {
				t.Fatalf("Parse(%q) = %+v: a signal action needs a signal 1-64 and one target", s, a)
			}
			// A pid beyond 32 bits wraps in kill(2): 4294967295 is -1, every process.
			if a.PID > MaxPID {
				t.Fatalf("Parse(%q) = %+v: pid beyond the kernel's limit %d", s, a, MaxPID)
			}
		case Shell:
			if strings.TrimSpace(a.Command) == "" || a.Signal != 0 || a.PID != 0 || a.File != "" {
				t.Fatalf("Parse(%q) = %+v: a shell action needs a command, and only that", s, a)
			}
		case Continue:
			if a != (Action{Kind: Continue}) {
				t.Fatalf("Parse(%q) = %+v: continue takes nothing", s, a)
			}
		default:
			t.Fatalf("Parse(%q) = %+v: unknown kind", s, a)
		}
	})
}

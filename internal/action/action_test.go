package action

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		spec string
		want Action
	}{
		{"trace", Action{Kind: Trace}},
		{"trace,file=/tmp/x.json", Action{Kind: Trace, File: "/tmp/x.json"}},
		{"signal,num=10,pid=123", Action{Kind: Signal, Signal: unix.SIGUSR1, PID: 123}},
		{"signal,pid=parent,num=SIGUSR2", Action{Kind: Signal, Signal: unix.SIGUSR2, Parent: true}},
		{"signal,num=term,pid=7", Action{Kind: Signal, Signal: unix.SIGTERM, PID: 7}},
		{"shell,command=echo a,b >> f", Action{Kind: Shell, Command: "echo a,b >> f"}},
		{"continue", Action{Kind: Continue}},
	} {
		got, err := Parse(c.spec)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "stop", "trace,file=", "trace,x=1", "signal,num=10", "signal,pid=1",
		"signal,num=0,pid=1", "signal,num=NOPE,pid=1", "signal,num=10,pid=-3", "signal,num=10,pid=1,x=2",
		"shell", "shell,command=  ", "continue,now"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if _, err := ParseList("on-end", []string{"continue"}, true); err == nil {
		t.Error("--on-end continue accepted")
	}
	l, err := ParseList("on-threshold", []string{"trace", "continue"}, false)
	if err != nil || !l.Continue() || l.Empty() {
		t.Errorf("ParseList: %v, continue %v, empty %v", err, l.Continue(), l.Empty())
	}
	if !(List{{Kind: Continue}}).Empty() || (List{}).Continue() {
		t.Error("a lone continue runs nothing; no continue stops")
	}
}

// TestRunInOrder runs every kind of action on one event: the trace is saved,
// the signal reaches its process, the shell command sees the event and the
// JSON document (which is removed afterwards), and a failing action does not
// stop the ones after it.
func TestRunInOrder(t *testing.T) {
	dir := t.TempDir()
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	out := filepath.Join(dir, "env")
	l := List{
		{Kind: Trace},
		{Kind: Shell, Command: "exit 3"},
		{Kind: Signal, Signal: unix.SIGUSR1, PID: sleeper.Process.Pid},
		{Kind: Shell, Command: `echo "$RTSCOPE_EVENT|$RTSCOPE_VERDICT|$RTSCOPE_METRIC|$(cat "$RTSCOPE_JSON")|$RTSCOPE_JSON" > ` + out + `; echo to-log`},
	}
	var log bytes.Buffer
	ev := Event{Name: "threshold", Verdict: "interference: hog/9 (FIFO 90)", DefaultFile: filepath.Join(dir, "trace.json"),
		SaveTrace: func(p string) error { return os.WriteFile(p, []byte("TRACE"), 0o644) },
		WriteJSON: func(p string) error { return os.WriteFile(p, []byte(`{"x":1}`), 0o644) },
		Env:       map[string]string{"RTSCOPE_METRIC": "latency"}}
	errs := l.Run(ev, &log)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "exit status 3") {
		t.Errorf("errors %v; want the one of exit 3", errs)
	}
	if b, err := os.ReadFile(ev.DefaultFile); err != nil || string(b) != "TRACE" {
		t.Errorf("trace file: %q, %v", b, err)
	}
	err := sleeper.Wait()
	ws, _ := sleeper.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != unix.SIGUSR1 {
		t.Errorf("sleep ended with %v; want killed by SIGUSR1", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(string(b)), "|")
	if len(f) != 5 || f[0] != "threshold" || f[1] != ev.Verdict || f[2] != "latency" || f[3] != `{"x":1}` {
		t.Errorf("the shell saw %q", f)
	}
	if _, err := os.Stat(f[len(f)-1]); !os.IsNotExist(err) {
		t.Errorf("temporary JSON %s left behind (%v)", f[len(f)-1], err)
	}
	if !strings.Contains(log.String(), "to-log") || !strings.Contains(log.String(), "sent SIGUSR1") {
		t.Errorf("log:\n%s", log.String())
	}
}

// TestRunKeepsGivenJSON: with a JSON document of its own (--json), the shell
// gets its path and it stays.
func TestRunKeepsGivenJSON(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "report.json")
	os.WriteFile(doc, []byte("{}"), 0o644)
	out := filepath.Join(dir, "out")
	var log bytes.Buffer
	errs := List{{Kind: Shell, Command: `echo "$RTSCOPE_JSON" > ` + out}}.Run(Event{Name: "end", JSONPath: doc}, &log)
	b, _ := os.ReadFile(out)
	if len(errs) > 0 || strings.TrimSpace(string(b)) != doc {
		t.Errorf("shell saw %q (%v); want %s", b, errs, doc)
	}
	if _, err := os.Stat(doc); err != nil {
		t.Errorf("given JSON removed: %v", err)
	}
}

// rtscopeVar finds the RTSCOPE_* variables the code gives actions: map
// keys ("RTSCOPE_X": ...) and assignments ("RTSCOPE_X="+...).
var rtscopeVar = regexp.MustCompile(`"(RTSCOPE_[A-Z_]+)(?:=|":)`)

// Every variable a shell action gets is in docs/actions.md, and the page
// lists none the code does not set.
func TestDocumentedVariables(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "../watch", "../timerlat"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		files = append(files, m...)
	}
	set := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rtscopeVar.FindAllStringSubmatch(string(b), -1) {
			set[m[1]] = true
		}
	}
	doc, err := os.ReadFile("../../docs/actions.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(RTSCOPE_[A-Z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	for v := range set {
		if !documented[v] {
			t.Errorf("%s is given to actions but not in docs/actions.md", v)
		}
	}
	for v := range documented {
		if !set[v] {
			t.Errorf("docs/actions.md lists %s, which no action gets", v)
		}
	}
	for _, v := range []string{"RTSCOPE_CPU", "RTSCOPE_TOOL", "RTSCOPE_THRESHOLD_FIRED", "RTSCOPE_THRESHOLD_SKIPPED"} {
		if !set[v] {
			t.Errorf("%s not found in the code: the scan misses it", v)
		}
	}
}

// A shell action sees the user's environment and the documented
// variables, not rtscope's re-exec settings (GODEBUG=asyncpreemptoff=1
// and its marker, main.go).
func TestShellEnvironment(t *testing.T) {
	t.Setenv("GODEBUG", "asyncpreemptoff=1")
	t.Setenv("RTSCOPE_REEXEC_GODEBUG", "GODEBUG=madvdontneed=1") // the user's own, before the re-exec
	t.Setenv("RTSCOPE_TEST_USER_VAR", "kept")
	out := filepath.Join(t.TempDir(), "env")
	ev := Event{Name: "end", Verdict: "ok", WriteJSON: func(p string) error { return os.WriteFile(p, []byte("{}"), 0o644) },
		Env: map[string]string{"RTSCOPE_TOOL": "watch", "RTSCOPE_STATUS": "0"}}
	if errs := (List{{Kind: Shell, Command: "env > " + out}}).Run(ev, io.Discard); len(errs) > 0 {
		t.Fatal(errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(strings.TrimSpace(string(b)), "\n")
	var godebug []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "GODEBUG=") || strings.HasPrefix(kv, "RTSCOPE_REEXEC_GODEBUG=") {
			godebug = append(godebug, kv)
		}
	}
	if !slices.Equal(godebug, []string{"GODEBUG=madvdontneed=1"}) {
		t.Errorf("the action saw %q; want only the user's GODEBUG=madvdontneed=1", godebug)
	}
	for _, want := range []string{"RTSCOPE_TEST_USER_VAR=kept", "RTSCOPE_EVENT=end", "RTSCOPE_TOOL=watch", "RTSCOPE_STATUS=0"} {
		if !slices.Contains(env, want) {
			t.Errorf("the action's environment has no %s", want)
		}
	}
}

package cli

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// mainOutput runs Main with args and returns its exit status, stdout and
// stderr.
func mainOutput(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	out, err := os.Create(dir + "/stdout")
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(dir + "/stderr")
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = out, errf
	code = Main(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	_ = out.Close()
	_ = errf.Close()
	o, _ := os.ReadFile(dir + "/stdout")
	e, _ := os.ReadFile(dir + "/stderr")
	return code, string(o), string(e)
}

// Help that was asked for goes to stdout with status 0 (rtscope --help |
// less shows it), nothing on stderr.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"watch", "--help"}, {"help", "watch"}, {"watch", "-h"},
		{"serve", "--help"}, {"ctl", "--help"}, {"doctor", "--help"}, {"demo", "--help"}, {"scenario", "--help"},
		{"scenario", "help"}, {"scenario", "run", "--help"}, {"scenario", "run", "rt-hog", "--help"},
		{"timerlat", "--help"}, {"timerlat", "hist", "--help"}, {"help", "timerlat"}, {"completion", "--help"}} {
		code, stdout, stderr := mainOutput(t, args...)
		if code != 0 || !strings.HasPrefix(stdout, "Usage: rtscope ") && !strings.HasPrefix(stdout, "rtscope: ") || stderr != "" {
			t.Errorf("rtscope %s: status %d, stdout %.40q, stderr %q; want the help on stdout, status 0",
				strings.Join(args, " "), code, stdout, stderr)
		}
	}
	for _, args := range [][]string{{"-V"}, {"--version"}} {
		if code, stdout, stderr := mainOutput(t, args...); code != 0 || stdout != "rtscope "+Version+"\n" || stderr != "" {
			t.Errorf("rtscope %s: status %d, stdout %q, stderr %q", args[0], code, stdout, stderr)
		}
	}
}

// Usage errors go to stderr, in one line naming the command (the usage
// itself when no command was given), with the statuses they had before
// cobra: 1, and 2 for scenario without a subcommand.
func TestUsageErrorsGoToStderr(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		prefix string
	}{
		{nil, 1, "rtscope: a real-time"},
		{[]string{"bogus"}, 1, `rtscope: unknown command "bogus" (run 'rtscope help')`},
		{[]string{"wacth"}, 1, `rtscope: unknown command "wacth" (did you mean watch?)`},
		{[]string{"watch", "--bogus"}, 1, "rtscope watch: unknown flag: --bogus"},
		{[]string{"watch", "--tid", "x1"}, 1, "rtscope watch: --tid"},
		{[]string{"watch", "stray"}, 1, `rtscope watch: unexpected argument "stray"`},
		{[]string{"watch", "-i"}, 1, "rtscope watch: flag needs an argument"},
		{[]string{"serve", "stray"}, 1, `rtscope serve: unexpected argument "stray"`},
		{[]string{"ctl"}, 1, "rtscope ctl: missing command"},
		{[]string{"ctl", "frobnicate"}, 1, `rtscope ctl: unknown command "frobnicate"`},
		{[]string{"doctor", "--sample", "2m"}, 1, "rtscope doctor: --sample"},
		{[]string{"demo", "a", "b"}, 1, `rtscope demo: unexpected argument "b"`},
		{[]string{"scenario"}, 2, "Usage: rtscope scenario list"},
		{[]string{"scenario", "frob"}, 1, `rtscope scenario: unknown subcommand "frob"`},
		{[]string{"scenario", "run", "nosuch"}, 1, "rtscope scenario run: "},
		{[]string{"timerlat", "-k"}, 1, "rtscope timerlat: -k"},
		{[]string{"completion", "tcsh"}, 1, "rtscope completion: unknown command"},
		{[]string{"version", "x"}, 1, "rtscope version: unknown command"},
	} {
		code, stdout, stderr := mainOutput(t, c.args...)
		oneLine := strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") == 0
		if code != c.code || stdout != "" || !strings.HasPrefix(stderr, c.prefix) || (c.args != nil && c.code == 1 && !oneLine) {
			t.Errorf("rtscope %s: status %d, stdout %q, stderr %q; want status %d, stderr %q...",
				strings.Join(c.args, " "), code, stdout, stderr, c.code, c.prefix)
		}
	}
}

// watch --help's Targets summary names every kind of target, and the user
// a launched command runs as.
func TestWatchHelpTargets(t *testing.T) {
	_, stdout, _ := mainOutput(t, "watch", "--help")
	_, targets, _ := strings.Cut(stdout, "Targets (repeatable, combinable):\n")
	targets, _, _ = strings.Cut(targets, "\n\n")
	for _, f := range []string{"--tid", "--pid", "--comm", "--cgroup", "-- COMMAND", "--user"} {
		if !strings.Contains(targets, f) {
			t.Errorf("watch --help's Targets summary has no %s:\n%s", f, targets)
		}
	}
}

// A command registered the way they were before cobra (Register, Run with
// every argument) still gets all of its arguments, --help included, and
// its exit status is rtscope's.
func TestSelfParsedCommand(t *testing.T) {
	var got []string
	root := &cobra.Command{Use: "rtscope", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(selfParsed(&Command{Name: "old", Summary: "an old-style command", Run: func(args []string) int {
		got = args
		return 3
	}}))
	args := []string{"--flag", "v", "-h", "--", "x"}
	root.SetArgs(append([]string{"old"}, args...))
	err := root.Execute()
	var st exitStatus
	if !errors.As(err, &st) || st != 3 || !slices.Equal(got, args) {
		t.Errorf("old-style command: args %q, error %v; want %q and status 3", got, err, args)
	}
}

// TestVersion: rtscope version starts with what --version prints, then
// names the commit, the build date, Go, both engines and a hash for each
// of the seven BPF objects; --json says the same.
func TestVersion(t *testing.T) {
	code, out, stderr := mainOutput(t, "version")
	if code != 0 || stderr != "" || !strings.HasPrefix(out, "rtscope "+Version+"\n") {
		t.Fatalf("rtscope version: status %d, stderr %q, stdout %q", code, stderr, out)
	}
	for _, want := range []string{"commit ", "built ", "go ", "engines     btf, classic", "classic.bpf.o", "timerlat.bpf.o", "isolation.bpf.o", "isolation_classic.bpf.o", "inject.bpf.o"} {
		if !strings.Contains(out, want) {
			t.Errorf("rtscope version lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = mainOutput(t, "version", "--json")
	var b BuildInfo
	if err := json.Unmarshal([]byte(out), &b); code != 0 || err != nil {
		t.Fatalf("rtscope version --json: status %d, %v: %q", code, err, out)
	}
	seen := map[string]bool{}
	for _, o := range b.Objects {
		if len(o.SHA256) != 64 || seen[o.SHA256] {
			t.Errorf("object %q: hash %q missing or repeated", o.Name, o.SHA256)
		}
		seen[o.SHA256] = true
	}
	if b.Schema != "rtscope.version/v1" || b.Version != Version || len(b.Objects) != 8 || len(b.Engines) != 2 || b.Go == "" {
		t.Errorf("rtscope version --json: %+v", b)
	}
}

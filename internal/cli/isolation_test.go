package cli

import (
	"strings"
	"testing"
)

// isolation --help is its help on stdout; a bad -c, a bad -d or a stray
// argument is one sentence on stderr, status 1, before any BPF is loaded.
func TestIsolationCommandLine(t *testing.T) {
	code, stdout, stderr := mainOutput(t, "isolation", "--help")
	if code != 0 || !strings.HasPrefix(stdout, "Usage: rtscope isolation") || !strings.Contains(stdout, "--allow") || stderr != "" {
		t.Errorf("isolation --help: status %d, stdout %.60q, stderr %q", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "x"}, `rtscope isolation: -c: CPU list "x": "x" is not a CPU number or range`},
		{[]string{"-c", "4000"}, "rtscope isolation: CPU 4000 is not online"},
		{[]string{"-c", "1", "-d", "0s"}, "rtscope isolation: -d 0s: want a duration above 0"},
		{[]string{"-c", "1", "stray"}, `rtscope isolation: unexpected argument "stray" (the CPUs go in -c)`},
		{[]string{"-c", "1", "--engine", "fast"}, `rtscope isolation: --engine "fast": must be btf or classic`},
	} {
		code, stdout, stderr := mainOutput(t, append([]string{"isolation"}, c.args...)...)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("isolation %v: status %d, stdout %q, stderr %q; want status 1 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

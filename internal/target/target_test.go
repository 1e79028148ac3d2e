package target

import (
	"os"
	"os/user"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestValidateErrors(t *testing.T) {
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{}, "nothing to watch"},
		{Spec{TIDs: []int{0}}, "idle task"},
		{Spec{TIDs: []int{-4}}, "negative"},
		{Spec{PIDs: []int{0}}, "idle task"},
		{Spec{TIDs: []int{1 << 30}}, "does not exist"},
		{Spec{PIDs: []int{1 << 30}}, "does not exist"},
		{Spec{Comms: []string{"a-very-long-task-name"}}, "longer than the kernel keeps"},
		{Spec{Command: []string{"/nonexistent/prog"}}, "cannot execute"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.spec, err, c.want)
		}
	}
	if err := (Spec{TIDs: []int{os.Getpid()}, Comms: []string{"x"}}).Validate(); err != nil {
		t.Errorf("valid spec refused: %v", err)
	}
}

func TestLaunchStopsBeforeFirstInstruction(t *testing.T) {
	dir := t.TempDir()
	marker := dir + "/ran"
	l, err := Launch([]string{"sh", "-c", "touch " + marker}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Stopped at exec: nothing has run yet.
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("command ran before Resume")
	}
	if err := l.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := l.Cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("command did not run after Resume")
	}
}

// A command launched as another user (under sudo: SUDO_UID) runs with that
// user's HOME, USER and LOGNAME, as runuser gives them, and without
// rtscope's re-exec GODEBUG.
func TestLaunchAsUserGetsTheirEnvironment(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to run a command as another user (CI runs as root)")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal("no user nobody: Debian has one (its base-passwd)")
	}
	t.Setenv("HOME", "/root")
	t.Setenv("USER", "root")
	t.Setenv("LOGNAME", "root")
	t.Setenv("GODEBUG", "asyncpreemptoff=1")
	t.Setenv(ReexecMarker, "")
	t.Setenv("SUDO_UID", nobody.Uid)
	t.Setenv("SUDO_GID", nobody.Gid)
	cred, err := DefaultUser()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "rtscope-launch-") // t.TempDir's parent is root's only
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	out := dir + "/env"
	l, err := Launch([]string{"sh", "-c", `echo "$HOME|$USER|$LOGNAME|${GODEBUG-unset}|${` + ReexecMarker + `-unset}" > ` + out}, cred)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := l.Cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := nobody.HomeDir + "|nobody|nobody|unset|unset"
	if got := strings.TrimSpace(string(b)); got != want {
		t.Errorf("the command saw HOME|USER|LOGNAME|GODEBUG|marker %q, want %q", got, want)
	}
}

// LoginEnv replaces HOME, USER and LOGNAME, once each, and keeps the rest;
// as rtscope (no credential) it changes nothing.
func TestLoginEnv(t *testing.T) {
	env := []string{"HOME=/root", "PATH=/bin", "USER=root", "LOGNAME=root", "TERM=xterm"}
	if got := LoginEnv(env, nil); !slices.Equal(got, env) {
		t.Errorf("LoginEnv(nil) = %q", got)
	}
	root := LoginEnv([]string{"PATH=/bin"}, &syscall.Credential{Uid: 0})
	if !slices.Contains(root, "HOME=/root") || !slices.Contains(root, "USER=root") || !slices.Contains(root, "LOGNAME=root") || len(root) != 4 {
		t.Errorf("LoginEnv(uid 0) = %q", root)
	}
	if nobody, err := user.Lookup("nobody"); err == nil {
		got := LoginEnv(env, &syscall.Credential{Uid: 65534})
		want := []string{"PATH=/bin", "TERM=xterm", "HOME=" + nobody.HomeDir, "USER=nobody", "LOGNAME=nobody"}
		if !slices.Equal(got, want) {
			t.Errorf("LoginEnv(nobody) = %q, want %q", got, want)
		}
	}
}

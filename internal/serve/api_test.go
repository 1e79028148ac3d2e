package serve

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The socket's directory must be root's alone; a stale socket is
// replaced, a live one or another file refused; the socket is mode 0600.
func TestListenSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root): the private directory check is root's")
	}
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := listenSocket(filepath.Join(open, "s.sock")); err == nil || !strings.Contains(err.Error(), "only root can write") {
		t.Errorf("world-writable directory: %v", err)
	}
	sock := filepath.Join(dir, "priv", "s.sock")
	ln, err := listenSocket(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(sock); fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(sock)); fi.Mode().Perm() != 0o700 {
		t.Errorf("created directory mode %v, want 0700", fi.Mode().Perm())
	}
	go func() { // a live agent answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	if _, err := listenSocket(sock); err == nil || !strings.Contains(err.Error(), "another agent") {
		t.Errorf("live socket: %v", err)
	}
	// A dead agent's socket: net.Listener unlinks on Close, so leave one behind.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = ln.Close()
	ln2, err := listenSocket(sock)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	_ = ln2.Close()
	plain := filepath.Join(dir, "priv", "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := listenSocket(plain); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file: %v", err)
	}
}

// Requests that are wrong are refused with one sentence before reaching
// the engine (no session runs here: a request that reached it would fail
// with errEnded).
func TestAPIRefusals(t *testing.T) {
	c := NewControl(Config{Targets: []TargetConfig{{Comm: "a"}}, SLO: []string{"latency=1ms"}}, "", nil)
	c.Ended()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: apiHandler(c, nil)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	cl := NewClient(sock)
	for _, tc := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"POST", PathTargets, TargetConfig{Comm: "x", PID: 3}, "exactly one of comm, pid, tid or cgroup"},
		{"POST", PathTargets, TargetConfig{Comm: "sixteen-chars-xx"}, "more than 15 characters"},
		{"POST", PathTargets, TargetConfig{Comm: "a"}, "already watched"},
		{"DELETE", PathTargets, TargetConfig{PID: 9}, "not watched"},
		{"POST", PathTargets, map[string]any{"unit": "x.service"}, "unknown field"},
		{"POST", PathTargets, TargetConfig{Cgroup: "/x", Comm: "x"}, "exactly one of comm, pid, tid or cgroup"},
		{"POST", PathSLO, SLORequest{SLO: "latency=1ms"}, "already set"},
		{"POST", PathSLO, SLORequest{SLO: "latency=2ms"}, "stopping"}, // accepted: replaces latency=1ms
		{"POST", PathSLO, SLORequest{SLO: "7:bogus=1ms"}, "bogus"},
		{"DELETE", PathSLO, SLORequest{SLO: "7:latency=1ms"}, "not set"},
		{"POST", PathTargets, TargetConfig{TID: 5}, "stopping"},
		{"GET", PathTargets, nil, "stopping"},
	} {
		err := cl.Do(tc.method, tc.path, tc.body, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s %v: %v, want %q", tc.method, tc.path, tc.body, err, tc.want)
		}
	}
	if err := NewClient(filepath.Join(t.TempDir(), "none")).Do("GET", PathTargets, nil, nil); err == nil || !strings.Contains(err.Error(), "no agent on --socket") {
		t.Errorf("no agent: %v", err)
	}
}

// A socket in a directory other users can write (--socket /tmp/x.sock) is
// refused with what the directory needs and the ways out, not "remove it"
// (of /tmp).
func TestSocketDirectoryRefusalSaysWhatIsNeeded(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root): the private directory check is root's")
	}
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil { // as /tmp
		t.Fatal(err)
	}
	_, err := listenSocket(filepath.Join(tmp, "x.sock"))
	if err == nil {
		t.Fatal("a socket in a world-writable directory was accepted")
	}
	msg := err.Error()
	for _, want := range []string{"--socket " + tmp + "/x.sock", "writable by other users", "owned by root that only root can write", DefaultSocket, `--socket ""`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "remove it") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one sentence, without 'remove it'", msg)
	}
}

// A client refused by the socket's permissions is told to run as root,
// not that there is no agent; a socket nobody listens on is "no agent".
func TestClientPermissionDenied(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	c := NewClient(sock)
	denied := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}
	if err := c.dialError(denied); !strings.Contains(err.Error(), "permission denied: only root may control the agent; run rtscope ctl as root") ||
		strings.Contains(err.Error(), "no agent") {
		t.Errorf("EACCES: %v", err)
	}
	err := c.Do("GET", PathTargets, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no agent on --socket "+sock) {
		t.Errorf("no socket: %v", err)
	}
}

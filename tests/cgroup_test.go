package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cgroupRoot is the cgroup v2 mount (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on hybrid hosts).
func cgroupRoot(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if f, g := strings.Fields(pre), strings.Fields(post); ok && len(f) >= 5 && len(g) > 0 && g[0] == "cgroup2" {
			return f[4]
		}
	}
	t.Fatal("no cgroup v2 mount (CI has one)")
	return ""
}

// A cgroup target tracks every task that enters the cgroup or one below
// it: a process there before the agent starts (the scan), one moved into
// a child cgroup while it runs (cgroup_attach_task, then a scan for its
// other threads), the children of a shell moved in (fork); not a process
// of the same names outside; and, once the target is removed, neither
// those (untracked at once) nor a new one moved in. The tracked loops are reported on /metrics, labelled
// with the cgroup's service name (unit).
func TestServeCgroup(t *testing.T) {
	root := cgroupRoot(t)
	// A service's name: the series carry it as their unit label.
	name := fmt.Sprintf("rtscope-e2e-%d.service", os.Getpid())
	dir := filepath.Join(root, name)
	sub := filepath.Join(dir, "sub")
	for _, d := range []string{dir, sub} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	move := func(cg string, pid int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatalf("moving %d into %s: %v", pid, cg, err)
		}
	}
	var started []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range started {
			c.Process.Kill()
			c.Wait()
		}
		for _, cg := range []string{sub, dir} { // what is left goes back to the root
			b, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
			for _, p := range strings.Fields(string(b)) {
				os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(p), 0)
			}
			if err := syscall.Rmdir(cg); err != nil {
				t.Errorf("removing %s: %v", cg, err)
			}
		}
	})
	start := func(args ...string) *exec.Cmd {
		t.Helper()
		c := exec.Command(args[0], args[1:]...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		started = append(started, c)
		return c
	}
	// One scenario at a time (they claim CPUs); cyclictest -t 2: a
	// process of three threads named cyclictest.
	cyclic := func() *exec.Cmd { return start("cyclictest", "-t", "2", "-i", "2000", "-q", "-D", "10") }

	before := start(rtscope, "scenario", "run", "healthy-loop", "--duration", "10s", "-q")
	move(dir, before.Process.Pid)
	outside := cyclic()
	sock := filepath.Join(t.TempDir(), "serve.sock")
	_, metricsURL := startServeSocket(t, sock, "--cgroup", name, "--tick", "200ms") // by its unit name
	later := cyclic()
	time.Sleep(300 * time.Millisecond) // its threads exist before it moves
	move(sub, later.Process.Pid)
	shell := start("sh", "-c", "sleep 0.5; sleep 5")
	move(dir, shell.Process.Pid)

	// count returns how many tasks of process pid (0: any) named comm
	// are tracked (the shell itself excepted).
	count := func(pid int, comm string) int {
		st, e := ctl(t, sock, "list")
		if st == nil {
			t.Fatalf("ctl list: %s", e)
		}
		n := 0
		for _, tk := range st.Tracked {
			if (pid == 0 || tk.PID == pid) && tk.Comm == comm && tk.PID != shell.Process.Pid {
				n++
			}
		}
		return n
	}
	tracked := func(pid int, comm string) bool { return count(pid, comm) > 0 }
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); !ok(); {
			if time.Now().After(end) {
				t.Fatalf("after 5 s: %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("the control thread of the process in the cgroup before the start is tracked", func() bool { return tracked(before.Process.Pid, "control") })
	waitFor("the 3 threads of the process moved into the child cgroup are tracked", func() bool { return count(later.Process.Pid, "cyclictest") == 3 })
	waitFor("the shell's child forked in the cgroup is tracked", func() bool { return tracked(0, "sleep") })
	if tracked(outside.Process.Pid, "cyclictest") {
		t.Errorf("the process outside the cgroup is tracked")
	}
	var cycles float64
	waitFor("the tracked loops' cycles on /metrics", func() bool {
		cycles, _ = scrape(t, metricsURL, `rtscope_cycle_seconds_count{target="control",unit="`+name+`"}`)
		return cycles > 100
	})

	if st, e := ctl(t, sock, "remove", "--cgroup", name); st == nil {
		t.Fatalf("ctl remove --cgroup: %s", e)
	}
	// Its tasks, still running, are tracked no more.
	if tracked(before.Process.Pid, "control") || count(later.Process.Pid, "cyclictest") > 0 {
		t.Errorf("tasks of the removed cgroup target are still tracked")
	}
	after := start("sleep", "5")
	move(dir, after.Process.Pid)
	time.Sleep(500 * time.Millisecond)
	if tracked(after.Process.Pid, "sleep") {
		t.Errorf("a process moved into the cgroup after its target was removed is tracked")
	}
	t.Logf("cgroup %s: %v control cycles", dir, cycles)
}

package tests

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalsEndTheRun: SIGINT, SIGTERM, SIGHUP and SIGPIPE end a watch as
// its duration would: the report is written, the launched command is
// stopped (not orphaned), and the status is 0. Before, SIGHUP and SIGPIPE
// killed rtscope without a report.
func TestSignalsEndTheRun(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			d := t.TempDir()
			js, pidf := filepath.Join(d, "r.json"), filepath.Join(d, "pid")
			cmd := exec.Command(rtscope, "watch", "-q", "--json", js, "--", "sh", "-c", "echo $$ > "+pidf+"; exec sleep 60")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			for sc.Scan() && !strings.Contains(sc.Text(), "attached and tracking") {
			}
			time.Sleep(300 * time.Millisecond) // the command wrote its pid
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if err != nil {
				t.Errorf("rtscope ended with %v after %v; want status 0", err, sig)
			}
			if _, err := os.Stat(js); err != nil {
				t.Errorf("no report after %v: %v", sig, err)
			}
			b, _ := os.ReadFile(pidf)
			if pid := strings.TrimSpace(string(b)); pid == "" {
				t.Errorf("the command did not start")
			} else if _, err := os.Stat("/proc/" + pid); err == nil {
				t.Errorf("the launched command %s still runs after rtscope's %v", pid, sig)
				exec.Command("kill", "-9", pid).Run()
			}
		})
	}
	// SIGKILL: no report can be written, but the launched command dies
	// with rtscope (Pdeathsig) instead of running on under PID 1.
	t.Run("SIGKILL", func(t *testing.T) {
		pidf := filepath.Join(t.TempDir(), "pid")
		cmd := exec.Command(rtscope, "watch", "-q", "--", "sh", "-c", "echo $$ > "+pidf+"; exec sleep 60")
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		for sc.Scan() && !strings.Contains(sc.Text(), "attached and tracking") {
		}
		var pid string
		for deadline := time.Now().Add(10 * time.Second); pid == "" && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			b, _ := os.ReadFile(pidf)
			pid = strings.TrimSpace(string(b))
		}
		if pid == "" {
			t.Fatal("the command did not start")
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		gone := false
		for deadline := time.Now().Add(10 * time.Second); !gone && time.Now().Before(deadline); {
			_, err := os.Stat("/proc/" + pid)
			gone = err != nil
			time.Sleep(20 * time.Millisecond)
		}
		if !gone {
			t.Errorf("the launched command %s still runs after rtscope was killed", pid)
			_ = exec.Command("kill", "-9", pid).Run()
		}
	})
	t.Run("SIGPIPE", func(t *testing.T) {
		js := filepath.Join(t.TempDir(), "r.json")
		// head exits after the first line of the live table: the next
		// write gets EPIPE, which ends the run.
		out, err := exec.Command("bash", "-o", "pipefail", "-c",
			rtscope+" watch -i 100ms --json "+js+" -- sleep 60 | head -1").CombinedOutput()
		if err != nil {
			t.Errorf("rtscope | head -1: %v\n%s", err, out)
		}
		if _, err := os.Stat(js); err != nil {
			t.Errorf("no report after SIGPIPE: %v", err)
		}
	})
}

// TestOutputFiles: a bad output path fails before the run, not after it;
// a symlink at the destination is replaced, not followed; a failed write
// keeps the previous file and is an error.
func TestOutputFiles(t *testing.T) {
	d := t.TempDir()
	start := time.Now()
	out, err := exec.Command(rtscope, "watch", "-q", "-d", "60s", "--json", filepath.Join(d, "missing", "r.json"), "--", "sleep", "60").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || time.Since(start) > 30*time.Second {
		t.Errorf("--json in a missing directory: %v after %v; want status 1 at once\n%s", err, time.Since(start), out)
	}
	victim, link := filepath.Join(d, "victim"), filepath.Join(d, "r.json")
	os.WriteFile(victim, []byte("precious"), 0o644)
	os.Symlink(victim, link)
	watch(t, "--", "true") // a plain run first: the helper writes its own file
	if out, err := exec.Command(rtscope, "watch", "-q", "--json", link, "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the symlink's target was overwritten: %q", b)
	}
	out, err = exec.Command(rtscope, "timerlat", "-q", "-c", lastCPU(), "-d", "1", "--json", "/dev/full").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "no space") {
		t.Errorf("timerlat --json /dev/full: %v; want status 1 naming the error\n%s", err, out)
	}
}

// TestLaunchedCommandUser: watch -- CMD runs CMD as --user, by default as
// the user who ran sudo, with no capabilities left; root only when asked
// or without sudo.
func TestLaunchedCommandUser(t *testing.T) {
	id := `echo "RESULT $(id -u):$(id -g) $(grep CapEff /proc/self/status | tr -d '\t')"`
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--user", "nobody"}, "65534:65534 CapEff:0000000000000000"},
		{[]string{"SUDO_UID=65534", "SUDO_GID=65534"}, nil, "65534:65534 CapEff:0000000000000000"},
		{[]string{"SUDO_UID=65534"}, []string{"--user", "0:0"}, "0:0 CapEff:"},
		{nil, nil, "0:0 CapEff:"},
	} {
		argv := append(append([]string{"watch", "-q"}, c.args...), "--", "sh", "-c", id)
		cmd := exec.Command(rtscope, argv...)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%v %v: %v", c.env, argv, err)
			continue
		}
		var line string
		for _, l := range strings.Split(string(out), "\n") {
			if r, ok := strings.CutPrefix(l, "RESULT "); ok {
				line = r
			}
		}
		if !strings.HasPrefix(line, c.want) || (c.want == "0:0 CapEff:" && strings.HasSuffix(line, "CapEff:0000000000000000")) {
			t.Errorf("%v %v: the command saw %q; want %q", c.env, c.args, line, c.want)
		}
	}
	if out, err := exec.Command(rtscope, "watch", "--user", "nosuchuser", "--", "true").CombinedOutput(); err == nil {
		t.Errorf("--user nosuchuser accepted:\n%s", out)
	}
}

// TestAutomaticHousekeeping: without -H, rtscope keeps its own threads off
// the CPU of the watched real-time task, says so in the JSON, and the
// launched command keeps the user's affinity.
func TestAutomaticHousekeeping(t *testing.T) {
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(online)) == "0" {
		t.Fatal("one CPU: nothing to keep off (CI machines have 2)")
	}
	rt := lastCPU()
	d := t.TempDir()
	script := `grep Cpus_allowed_list /proc/self/status > ` + d + `/cmd; exec taskset -c ` + rt + ` chrt -f 50 sh -c ` +
		`'sleep 1.6; grep -h Cpus_allowed_list /proc/$PPID/task/*/status | sort -u > ` + d + `/rtscope'`
	js := filepath.Join(d, "r.json")
	out, err := exec.Command(rtscope, "watch", "-q", "--json", js, "--", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r struct {
		Housekeeping *struct {
			CPUs      string `json:"cpus"`
			Automatic bool   `json:"automatic"`
			Shared    bool   `json:"shared"`
		} `json:"housekeeping"`
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	h := r.Housekeeping
	if h == nil || !h.Automatic || h.Shared || strings.Contains(h.CPUs, rt) {
		t.Errorf("housekeeping %+v; want automatic, away from CPU %s\n%s", h, rt, out)
	}
	own, _ := os.ReadFile(d + "/rtscope")
	if h != nil && strings.TrimSpace(string(own)) != "Cpus_allowed_list:\t"+h.CPUs {
		t.Errorf("rtscope's threads may run on %q; want only %s", own, h.CPUs)
	}
	cmd, _ := os.ReadFile(d + "/cmd")
	if strings.TrimSpace(string(cmd)) != "Cpus_allowed_list:\t"+strings.TrimSpace(string(online)) {
		t.Errorf("the launched command started with %q; want every online CPU (%s)", cmd, online)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unitSpec is what the packaged systemd unit asks of the service, as the
// test runs it without systemd.
type unitSpec struct {
	exec      []string // ExecStart's command line
	caps      string   // CapabilityBoundingSet as setpriv's --bounding-set: -all,+bpf,...
	runDir    string   // RuntimeDirectory, under /run
	runMode   string
	stateDir  string // StateDirectory, under /var/lib
	stateMode string
}

// parseUnit reads the unit's settings the test applies; a setting missing
// is an error (the test would run the service otherwise than the unit).
func parseUnit(text string) (unitSpec, error) {
	kv := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"ExecStart", "CapabilityBoundingSet", "RuntimeDirectory", "RuntimeDirectoryMode",
		"StateDirectory", "StateDirectoryMode", "ProtectSystem", "PrivateTmp", "ProtectHome", "NoNewPrivileges"} {
		if kv[k] == "" {
			return unitSpec{}, fmt.Errorf("the unit has no %s", k)
		}
	}
	caps := "-all"
	for _, c := range strings.Fields(kv["CapabilityBoundingSet"]) {
		caps += ",+" + strings.ToLower(strings.TrimPrefix(c, "CAP_"))
	}
	return unitSpec{exec: strings.Fields(kv["ExecStart"]), caps: caps,
		runDir: kv["RuntimeDirectory"], runMode: kv["RuntimeDirectoryMode"],
		stateDir: kv["StateDirectory"], stateMode: kv["StateDirectoryMode"]}, nil
}

// unitNamespace runs its command in a private mount namespace set up as
// the unit's sandbox: the package's /etc, /usr/bin and systemd unit files
// over the machine's (read-only overlays), RuntimeDirectory and StateDirectory
// created with their modes on fresh tmpfs /run and /var/lib,
// PrivateTmp, ProtectHome (empty read-only /root and /home) and
// ProtectSystem=strict (/ read-only). Nothing of it outlives the
// namespace: the machine keeps no file or mount.
const unitNamespace = `set -e
R=$1 RUNDIR=$2 RUNMODE=$3 STATEDIR=$4 STATEMODE=$5; shift 5
mount --make-rprivate /
mount -t overlay overlay -o lowerdir="$R/etc:/etc" /etc
mount -t overlay overlay -o lowerdir="$R/usr/bin:/usr/bin" /usr/bin
mount -t overlay overlay -o lowerdir="$R/usr/lib/systemd/system:/usr/lib/systemd/system" /usr/lib/systemd/system
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -m "$RUNMODE" "/run/$RUNDIR"
mount -t tmpfs -o mode=0755 tmpfs /var/lib
mkdir -m "$STATEMODE" "/var/lib/$STATEDIR"
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o ro,mode=0755 tmpfs /root
mount -t tmpfs -o ro,mode=0755 tmpfs /home
mount -o remount,bind,ro /
exec "$@"
`

// inUnit returns the command that runs args in the unit's sandbox over
// the package installed in root r.
func inUnit(r string, u unitSpec, args ...string) *exec.Cmd {
	return exec.Command("unshare", append([]string{"-m", "sh", "-c", unitNamespace, "sh", r, u.runDir, u.runMode,
		u.stateDir, u.stateMode}, args...)...)
}

// The packaged unit of rtscope serve (the idle agent): systemd-analyze
// verify accepts it (and refuses it with ExecStart pointing nowhere), and
// its ExecStart, run as the unit runs it (its sandbox, its capability
// bounding set, no new privileges, the package's /etc/rtscope/serve.yaml),
// starts idle (rtscope_up 1, rtscope_targets 0 on the configuration's
// /metrics address), answers rtscope ctl on the default socket (list, and
// an add whose running task gets tracked), and stops on SIGTERM with
// status 0, every BPF program and link it held gone. systemd itself, as
// PID 1, is not run here: this machine's PID 1 is not systemd (docs/install.md).
func TestDebServiceUnit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: the agent loads BPF, the test mounts in its own namespace (CI runs as root)")
	}
	for _, tool := range []string{"dpkg-deb", "systemd-analyze", "unshare", "setpriv", "nsenter", "bpftool"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, "no "+tool+" here")
		}
	}
	deb, err := buildDeb(testOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	r := installRoot(t, deb)
	text, err := os.ReadFile(filepath.Join(r, unitPath))
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(string(text))
	if err != nil {
		t.Fatal(err)
	}
	verifyUnit(t, r, u, string(text))
	if pid1, _ := os.ReadFile("/proc/1/comm"); strings.TrimSpace(string(pid1)) == "systemd" {
		t.Log("systemd is PID 1 here, but the test does not start units on the machine: the ExecStart is run as the unit would")
	}
	runUnit(t, r, u)
}

// verifyUnit runs systemd-analyze verify on the unit installed where
// systemd reads it, /usr/bin/rtscope being the package's, and on a copy
// whose ExecStart points nowhere, which it must refuse.
func verifyUnit(t *testing.T, r string, u unitSpec, text string) {
	t.Helper()
	if out, err := inUnit(r, u, "systemd-analyze", "verify", "--man=no", unitPath).CombinedOutput(); err != nil {
		t.Fatalf("systemd-analyze verify %s: %v\n%s", unitPath, err, out)
	}
	broken := t.TempDir()
	for _, d := range []string{"etc", "usr/bin", filepath.Dir(unitPath)} {
		if err := os.MkdirAll(filepath.Join(broken, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bad := strings.Replace(text, "ExecStart=/usr/bin/rtscope ", "ExecStart=/usr/bin/rtscope-none ", 1)
	if err := os.WriteFile(filepath.Join(broken, unitPath), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := inUnit(broken, u, "systemd-analyze", "verify", "--man=no", unitPath).CombinedOutput(); err == nil {
		t.Errorf("systemd-analyze verify accepted a unit whose ExecStart does not exist:\n%s", out)
	}
}

// runUnit starts the unit's ExecStart in its sandbox and checks the idle
// agent, ctl, and the stop.
func runUnit(t *testing.T, r string, u unitSpec) {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(r, "etc/rtscope/serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^listen:\s*(\S+)`).FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("the packaged serve.yaml names no listen address:\n%s", cfg)
	}
	url := "http://" + string(m[1]) + "/metrics"
	logPath := filepath.Join(t.TempDir(), "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logf.Close() }() // the agent's output, read on failure
	agent := inUnit(r, u, append([]string{"setpriv", "--bounding-set", u.caps, "--no-new-privs"}, u.exec...)...)
	agent.Stdout, agent.Stderr = logf, logf
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- agent.Wait() }()
	defer func() { _ = agent.Process.Kill() }() // after a failure only: stopped below otherwise
	logText := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	metrics := waitMetrics(t, url, exited, logText)
	if !strings.Contains(metrics, "\nrtscope_up 1\n") || !strings.Contains(metrics, "\nrtscope_targets 0\n") {
		t.Fatalf("the unit's agent is not idle: want rtscope_up 1 and rtscope_targets 0 on %s\n%s", url, logText())
	}
	pid := agent.Process.Pid // unshare, sh and setpriv exec in turn: rtscope's
	ctlTracks(t, pid)
	progs, links := heldBPF(t, pid)
	if len(progs) == 0 {
		t.Fatalf("the agent (pid %d) holds no BPF program", pid)
	}
	if err := agent.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after SIGTERM the agent exited with %v\n%s", err, logText())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the agent did not stop 30 s after SIGTERM\n%s", logText())
	}
	for _, kind := range []string{"prog", "link"} {
		ids := map[string][]string{"prog": progs, "link": links}[kind]
		if left := stillThere(kind, ids); len(left) > 0 {
			t.Errorf("after the agent stopped, BPF %ss %v it held are still loaded", kind, left)
		}
	}
}

// waitMetrics returns the agent's /metrics once it answers; it fails if
// the agent exits first or does not answer in a minute (loading the
// engine takes about a second).
func waitMetrics(t *testing.T, url string, exited <-chan error, logText func() string) string {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("the unit's agent exited before serving %s: %v\n%s", url, err, logText())
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read whole
		if err == nil && resp.StatusCode == http.StatusOK {
			return "\n" + string(b)
		}
	}
	t.Fatalf("the unit's agent did not serve %s within a minute\n%s", url, logText())
	return ""
}

// ctlState is the part of rtscope ctl's output the test reads.
type ctlState struct {
	Targets []map[string]any `json:"targets"`
	Tracked []ctlTask        `json:"tracked"`
}

// ctlTask is a tracked task in ctlState.
type ctlTask struct {
	Comm string `json:"comm"`
}

// ctlTracks asks the agent, through rtscope ctl on the default socket in
// its namespace, for its (empty) state, adds a target whose task runs,
// and waits until ctl lists that task tracked.
func ctlTracks(t *testing.T, pid int) {
	t.Helper()
	ctl := func(args ...string) (st ctlState) {
		t.Helper()
		out := run(t, "nsenter", append([]string{"-m", "-t", strconv.Itoa(pid), "/usr/bin/rtscope", "ctl"}, args...)...)
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("rtscope ctl %v: %v\n%s", args, err, out)
		}
		return st
	}
	if st := ctl("list"); len(st.Targets) != 0 {
		t.Fatalf("the idle agent lists targets %v", st.Targets)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "rtsunit") // its comm: the link's name
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	task := exec.Command(link, "60")
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = task.Process.Kill(); _ = task.Wait() }() // killed: its status is ours
	ctl("add", "--comm", "rtsunit")
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st := ctl("list")
		if slices.ContainsFunc(st.Tracked, func(tk ctlTask) bool { return tk.Comm == "rtsunit" }) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("10 s after rtscope ctl add --comm rtsunit, its running task is not tracked: %+v", st)
		}
	}
}

// heldBPF returns the ids of the BPF programs and links process pid holds
// open (its file descriptors' fdinfo).
func heldBPF(t *testing.T, pid int) (progs, links []string) {
	t.Helper()
	infos, err := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	if err != nil || len(infos) == 0 {
		t.Fatalf("fdinfo of pid %d: %v", pid, err)
	}
	for _, f := range infos {
		b, _ := os.ReadFile(f) // a descriptor closed meanwhile: not held
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, ":")
			switch strings.TrimSpace(k) {
			case "prog_id":
				progs = append(progs, strings.TrimSpace(v))
			case "link_id":
				links = append(links, strings.TrimSpace(v))
			}
		}
	}
	return progs, links
}

// stillThere returns the ids of BPF objects of kind (prog, link) that
// bpftool still finds, after waiting up to 10 s for the kernel to free
// them (it does so after an RCU grace period).
func stillThere(kind string, ids []string) []string {
	var left []string
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		left = left[:0]
		for _, id := range ids {
			if exec.Command("bpftool", kind, "show", "id", id).Run() == nil {
				left = append(left, id)
			}
		}
		if len(left) == 0 || time.Now().After(end) {
			return left
		}
	}
}

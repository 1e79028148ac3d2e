package tests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// A periodic loop (2 ms period, 1 ms of work): cycle time ~1 ms, response ~ cycle, period 2 ms.
func TestPeriodicLoop(t *testing.T) {
	r, _ := watch(t, "--show", "control", "--", rtscope, "scenario", "run", "healthy-loop",
		"--work", "1ms", "--period", "2ms", "--duration", "2s", "-q")
	if r.Schema != "rtscope.watch/v2" {
		t.Errorf("schema %q", r.Schema)
	}
	c := r.task(t, "control")
	if c.Policy != "FIFO" || c.Priority == nil || *c.Priority != 80 {
		t.Errorf("identity: %s %v", c.Policy, c.Priority)
	}
	cyc, resp, per := c.metric(t, "cycle"), c.metric(t, "response"), c.metric(t, "period")
	if cyc.Count < 500 {
		t.Fatalf("only %d cycles in 2 s of a 2 ms loop", cyc.Count)
	}
	if p50 := us(cyc.P50Ns); p50 < 900 || p50 > 1300 {
		t.Errorf("cycle p50 %.1f us, want ~1000", p50)
	}
	if d := us(resp.P50Ns) - us(cyc.P50Ns); d < -150 || d > 150 {
		t.Errorf("response p50 %.1f us vs cycle p50 %.1f us: should be about equal", us(resp.P50Ns), us(cyc.P50Ns))
	}
	if p50 := us(per.P50Ns); p50 < 1850 || p50 > 2150 {
		t.Errorf("period p50 %.1f us, want ~2000", p50)
	}
	for _, m := range []string{"latency", "timer-irq", "timer-thread"} {
		if c.metric(t, m).Count < 500 {
			t.Errorf("%s: only %d samples", m, c.metric(t, m).Count)
		}
	}
	if c.metric(t, "handler").Count != 0 || c.metric(t, "handler").MaxNs != nil {
		t.Errorf("a normal thread has no handler time: %+v", c.metric(t, "handler"))
	}
}

// A higher-priority SCHED_FIFO burst on the same CPU delays the victim's
// wakeups: the violations of a 2 ms latency SLO are the hog's bursts, and
// the analysis blames the hog for them. Judged over the ~100 bursts, not on
// the one worst case: a stall of this VM (1-20 ms at random) can be the
// worst latency, and its window then shows no hog (CI saw an 8.2 ms stall
// in a timer callback win over the 3 ms bursts).
func TestHogInLatencyViolations(t *testing.T) {
	for attempt := 1; !hogInLatencyViolations(t, attempt == 2); attempt++ {
		t.Log("repeating the run: too few violations kept their events to judge")
	}
}

// hogInLatencyViolations is one run of TestHogInLatencyViolations; false:
// too few windows kept their events (other load overwrote them) and last
// is not set, so the caller repeats it.
func hogInLatencyViolations(t *testing.T, last bool) bool {
	// A deep flight recorder: foreign load on a shared machine must not overwrite the windows.
	// 25 bursts a second, half of watch.ViolationBudget: a reader that falls
	// behind (a fresh-clone run analysed 48 of 97 at 50 a second: every
	// notice was read within one budget second) still explains most of them.
	r, _ := watch(t, "--show", "victim,hog", "--trace-events", "65536", "--slo", "latency=2ms", "--",
		rtscope, "scenario", "run", "rt-hog", "--burst", "3ms", "--every", "40ms", "--duration", "3s", "-q")
	v := r.task(t, "victim")
	hog := r.task(t, "hog")
	lat := v.metric(t, "latency")
	bursts := hog.metric(t, "latency").Count // one wakeup a burst
	if bursts < 40 || lat.Violations == nil || *lat.Violations < bursts*2/3 {
		t.Fatalf("%v latency violations over 2 ms for %d hog bursts of 3 ms; want one a burst", lat.Violations, bursts)
	}
	vc := lat.ViolationCauses
	if vc == nil || vc.Analysed < bursts/2 {
		t.Fatalf("violations explained: %+v; want most of the %d analysed (%d bursts)", vc, *lat.Violations, bursts)
	}
	// A window whose CPU's events were overwritten before it was read
	// (foreign load filling the flight recorder: an acceptance run beside
	// a switch storm lost 38 of 73) cannot show the hog: left out, as
	// steal is, the rest judged if there are enough.
	var byHog, lapped uint64
	for _, c := range vc.Causes {
		switch {
		case c.Cause == "interference" && strings.HasPrefix(c.Culprit, fmt.Sprintf("hog/%d (FIFO 90)", hog.TID)):
			byHog += c.Count
		case c.Cause == "inconclusive" && strings.HasSuffix(c.Culprit, ": no events recorded"):
			lapped += c.Count
			t.Logf("not judged: %d violations whose CPU's events were overwritten (%s)", c.Count, c.Culprit)
		default:
			t.Logf("not the hog: %d violations, %s by %s (steal %d ns)", c.Count, c.Cause, c.Culprit, c.StealNs)
		}
	}
	judged := vc.Analysed - lapped
	if judged < bursts/3 && !last {
		t.Logf("only %d of %d analysed violations kept their events (%d overwritten by other load)", judged, vc.Analysed, lapped)
		return false
	}
	if judged < bursts/3 {
		t.Fatalf("only %d of %d analysed violations kept their events (%d overwritten by other load): too few to judge", judged, vc.Analysed, lapped)
	}
	if byHog*10 < judged*8 {
		t.Errorf("%d of %d judged violations blamed on the hog; want 80%%: %+v", byHog, judged, vc.Causes)
	}
	// The worst case, when its verdict blames the hog, has the evidence:
	// the hog hands the CPU to the victim at the end of its window.
	// A maximum can be left without a window, which worst_note says (a
	// maximum reached as the run ended, its notice read too late, or a
	// failed snapshot): one fresh-clone run of this stop's two had none.
	if lat.Worst == nil {
		if lat.WorstNote == "" {
			t.Fatal("no worst latency trace, and no worst_note saying why")
		}
		t.Logf("the worst latency (%.1f us) has no window: %s", us(lat.MaxNs), lat.WorstNote)
		return true
	}
	if lat.Cause != "interference" || !strings.Contains(lat.Verdict, "hog/") {
		t.Logf("the worst latency (%.1f us) was not a burst: %s", us(lat.MaxNs), lat.Verdict)
		return true
	}
	ranHog := false
	for _, e := range lat.Worst.Events {
		if e.Type == "switch" && e.NextTID == v.TID && e.T > 0 && int64(e.T) <= int64(lat.Worst.ValueNs)+1000 {
			ranHog = e.PrevTID == hog.TID && e.PrevComm == "hog"
		}
	}
	if !ranHog || !strings.Contains(fmt.Sprint(lat.Worst.Events), "FIFO 90") {
		t.Errorf("the worst latency, blamed on interference (%s), does not show the hog (FIFO 90) running:\n%+v",
			lat.Verdict, lat.Worst.Events)
	}
	return true
}

// A loop that blocks on a semaphore mid-iteration: response (to the first
// block) is much shorter than the cycle (to the next timer sleep).
func TestHiddenBlocking(t *testing.T) {
	r, _ := watch(t, "--show", "control", "--", rtscope, "scenario", "run", "hidden-blocking", "--duration", "2s", "-q")
	c := r.task(t, "control")
	resp, cyc := c.metric(t, "response"), c.metric(t, "cycle")
	// Two activations per cycle: timer wakeup -> 1 ms work -> semaphore wait,
	// then post -> a few us -> timer sleep. The upper half of the responses is the first.
	if p90 := us(resp.P90Ns); p90 < 800 || p90 > 2500 {
		t.Errorf("response p90 %.1f us, want ~1000 (the work before the semaphore)", p90)
	}
	if us(cyc.P90Ns) < 2*us(resp.P90Ns) {
		t.Errorf("cycle p90 %.1f us should include the semaphore wait (response p90 %.1f us)", us(cyc.P90Ns), us(resp.P90Ns))
	}
	if lat := c.metric(t, "latency"); us(lat.P90Ns) > 300 {
		t.Errorf("latency p90 %.1f us: should stay small", us(lat.P90Ns))
	}
	if c.Counters["voluntary_switches"] < 2*c.Counters["timer_releases"]-5 {
		t.Errorf("each cycle has two sleeps: %v", c.Counters)
	}
}

// --pid tracks threads the process creates after watching began.
func TestPidTracksLaterThreads(t *testing.T) {
	flag := t.TempDir() + "/go"
	py := `import threading, time, ctypes, os, sys
libc = ctypes.CDLL(None)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
def work(name):
    libc.prctl(15, name.encode(), 0, 0, 0)
    for _ in range(100):
        time.sleep(0.002)
ts = [threading.Thread(target=work, args=("late%d" % i,)) for i in range(3)]
[t.start() for t in ts]
[t.join() for t in ts]
`
	cmd := exec.Command("python3", "-c", py, flag)
	if err := cmd.Start(); err != nil {
		t.Fatalf("python3: %v", err)
	}
	defer cmd.Wait()
	// Its threads are created once rtscope says it is tracking.
	r, _ := watchUntilReady(t, func(*exec.Cmd) { os.WriteFile(flag, nil, 0o644) }, "--pid", strconv.Itoa(cmd.Process.Pid), "-d", "60s")
	for i := 0; i < 3; i++ {
		tk := r.task(t, fmt.Sprintf("late%d", i))
		if !tk.Exited || tk.PID != uint32(cmd.Process.Pid) {
			t.Errorf("%s: exited %v pid %d", tk.Comm, tk.Exited, tk.PID)
		}
		if n := tk.metric(t, "timer-thread").Count; n < 90 {
			t.Errorf("%s: %d timer releases of 100", tk.Comm, n)
		}
	}
}

// Watching a thread ends when it exits, with its final report.
func TestExitingTaskFinalReport(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	var killed time.Time
	// Once watched, the task is ended by a signal: it wakes up and exits.
	r, text := watchUntilReady(t, func(*exec.Cmd) {
		killed = time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
	}, "--tid", strconv.Itoa(cmd.Process.Pid))
	if time.Since(killed) > 10*time.Second {
		t.Errorf("watch did not end when its only target exited")
	}
	tk := r.task(t, "sleep")
	if !tk.Exited {
		t.Errorf("not marked exited")
	}
	if !strings.Contains(text, fmt.Sprintf("sleep/%d", cmd.Process.Pid)) || !strings.Contains(text, "the worst first") {
		t.Errorf("no final report in the output:\n%s", text)
	}
	if tk.metric(t, "latency").Count != 1 {
		t.Errorf("one wakeup expected (the signal): %d", tk.metric(t, "latency").Count)
	}
}

// A process tree launched under watch: every descendant is tracked from its start.
func TestCommandTreeAndManyShortTasks(t *testing.T) {
	const n = 300
	// --all: the short tasks have nothing to show by default (no RT policy, period or SLO).
	r, text := watch(t, "--all", "--", "sh", "-c", fmt.Sprintf("i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done", n))
	if len(r.Tasks) < n+1 {
		t.Fatalf("%d tasks reported, want %d short-lived ones plus the shell", len(r.Tasks), n+1)
	}
	trues := 0
	for _, tk := range r.Tasks {
		if !tk.Exited {
			t.Errorf("task %d %s not exited", tk.TID, tk.Comm)
		}
		if tk.Comm == "true" {
			trues++
		}
	}
	if trues != n {
		t.Errorf("%d 'true' tasks, want %d", trues, n)
	}
	for k, v := range r.Lost {
		if v != 0 && k != "traces_truncated" {
			t.Errorf("lost %s: %d\n%s", k, v, text[len(text)-300:])
		}
	}
}

func TestSLOViolations(t *testing.T) {
	r, text := watch(t, "--show", "victim", "--slo", "latency=500us", "--slo", "cycle=10s", "--",
		rtscope, "scenario", "run", "rt-hog", "--duration", "1s", "-q")
	v := r.task(t, "victim")
	lat := v.metric(t, "latency")
	if lat.SLONs == nil || *lat.SLONs != 500000 || lat.Violations == nil || *lat.Violations == 0 {
		t.Errorf("latency SLO: %v violations %v", lat.SLONs, lat.Violations)
	}
	if c := v.metric(t, "cycle"); c.Violations == nil || *c.Violations != 0 {
		t.Errorf("cycle SLO 10 s: violations %v", c.Violations)
	}
	if r := v.metric(t, "response"); r.SLONs != nil || r.Violations != nil {
		t.Errorf("no response SLO: must be null, got %v %v", r.SLONs, r.Violations)
	}
	if !strings.Contains(text, "500.0") {
		t.Errorf("SLO not shown in the text report")
	}
}

// cyclictest, a client nobody here wrote: rtscope's return-to-user latency of its
// measuring thread agrees with what cyclictest measures for itself.
func TestCyclictestAgreement(t *testing.T) {
	if _, err := exec.LookPath("cyclictest"); err != nil {
		t.Fatal("cyclictest is missing: make test installs rt-tests")
	}
	cpu := lastCPU()
	dir := t.TempDir()
	samples := dir + "/cyclictest.txt"
	r, _ := watch(t, "--", "sh", "-c", "exec cyclictest -m -p 80 -i 1000 -l 3000 -a "+cpu+" -t 1 -q -v > "+samples)
	// cyclictest -v: "  thread:   count:  latency(us)" per sample.
	f, err := os.Open(samples)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ct []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.ReplaceAll(sc.Text(), ":", " "))
		if len(fields) == 3 {
			if v, err := strconv.ParseFloat(fields[2], 64); err == nil {
				ct = append(ct, v)
			}
		}
	}
	if len(ct) < 2500 {
		t.Fatalf("only %d cyclictest samples", len(ct))
	}
	sort.Float64s(ct)
	ctP50 := ct[len(ct)/2]
	var meas *task
	for i := range r.Tasks {
		if r.Tasks[i].Comm == "cyclictest" && r.Tasks[i].Metrics["timer-user"].Count > 1000 {
			meas = &r.Tasks[i]
		}
	}
	if meas == nil {
		t.Fatalf("no cyclictest thread with timer-user samples in %+v", r.Tasks)
	}
	user := meas.Metrics["timer-user"]
	p50 := us(user.P50Ns)
	// cyclictest reads the clock in user space after returning (a little later than
	// rtscope's return-to-user point) and rounds to 1 us; rtscope's percentiles are
	// within 6.25%. Agree within 5 us or 25%.
	tol := 5.0
	if 0.25*ctP50 > tol {
		tol = 0.25 * ctP50
	}
	if d := p50 - ctP50; d > tol || d < -tol {
		t.Errorf("median: rtscope timer-user %.1f us, cyclictest %.1f us (tolerance %.1f)", p50, ctP50, tol)
	}
	if diff := int64(user.Count) - int64(len(ct)); diff < -50 || diff > 50 {
		t.Errorf("sample counts: rtscope %d, cyclictest %d", user.Count, len(ct))
	}
	t.Logf("timer-user p50 %.1f us vs cyclictest %.1f us, %d vs %d samples", p50, ctP50, user.Count, len(ct))
}

// Bad input: one sentence, non-zero exit, nothing attached.
func TestBadInput(t *testing.T) {
	cases := [][]string{
		{"--tid", "0"}, {"--tid", "-3"}, {"--tid", "abc"}, {"--pid", "999999999"}, {"--tid", "999999999"},
		{"--comm", "x", "--slo", "latency=abc"}, {"--comm", "x", "--slo", "latency=-5us"},
		{"--comm", "x", "--slo", "bogus=5us"}, {"--comm", "x", "--slo", "latency=5furlongs"},
		{"--comm", "x", "--traces", "--no-trace"}, {"--", "/nonexistent/binary"}, {},
		{"--comm", "x", "--trace-events", "1000"}, {"--comm", "x", "-H", "4096"}, {"--comm", "x", "-H", "a"},
		// Empty values and limits, refused up front naming the flag.
		{"-p", "1", "--"}, {"--comm", "x", "-H", ""}, {"--comm", "x", "--json", ""}, {"--comm", "abcdefghijklmnop"},
		{"--comm", "x", "--perfetto", "/nonexistent/dir/x.pftrace"},
		// -d has timerlat's syntax (and Go's); nothing negative, zero or fractional days.
		{"--comm", "x", "-d", "0"}, {"--comm", "x", "-d", "-5s"}, {"--comm", "x", "-d", "1.5d"}, {"--comm", "x", "-d", "36501d"},
	}
	var many []string
	for i := 0; i < 300; i++ {
		many = append(many, "--comm", fmt.Sprintf("c%d", i))
	}
	cases = append(cases, many)
	for _, c := range cases {
		out, err := exec.Command(rtscope, append([]string{"watch", "-d", "1s"}, c...)...).CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() == 0 {
			t.Errorf("%v: exit %v, want failure", c, err)
			continue
		}
		msg := strings.TrimSpace(string(out))
		if !strings.HasPrefix(msg, "rtscope watch: ") || strings.Count(msg, "\n") > 0 {
			t.Errorf("%v: want one error line, got %q", c, msg)
		}
		if len(c) == len(many) && !strings.Contains(msg, "--comm") || strings.Contains(msg, "argument list too long") {
			t.Errorf("%v: the error must name the flag and the limit: %q", c[:2], msg)
		}
	}
}

// The exit status is a CI gate: rtscope's own error 1, then the launched
// command's own failure (128+N for signal N), then 2 when an SLO was
// violated, else 0; a command rtscope stops at --duration is not a failure.
func TestExitStatus(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"--", "sh", "-c", "exit 3"}, 3},
		{[]string{"--slo", "latency=1ns", "--", "sh", "-c", "kill -SEGV $$"}, 139},
		// Every wakeup takes more than a nanosecond.
		{[]string{"--slo", "latency=1ns", "--", "sh", "-c", "sleep 0.05; sleep 0.05"}, 2},
		{[]string{"--slo", "latency=10s", "--", "sleep", "0.1"}, 0},
		{[]string{"-d", "500ms", "--", "sleep", "30"}, 0},
		{[]string{"-d", "1", "--", "sleep", "30"}, 0}, // seconds without a unit, as timerlat's -d
		{[]string{"--slo", "latency=banana"}, 1},
		{[]string{"--on-threshold", "trace", "--", "true"}, 1}, // no SLO to cross
	}
	for _, c := range cases {
		argv := append([]string{"watch", "-q"}, c.args...)
		out, err := exec.Command(rtscope, argv...).CombinedOutput()
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("rtscope %s: exit status %d, want %d\n%s", strings.Join(argv, " "), got, c.want, out)
		}
	}
}

// SIGKILL leaves nothing attached: links and programs die with the process.
func TestNothingLeftAfterSigkill(t *testing.T) {
	cmd := exec.Command(rtscope, "watch", "-q", "--comm", "nonexistent")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Its programs, from its file descriptors (other rtscope processes may run).
	var ids []ebpf.ProgramID
	deadline := time.Now().Add(10 * time.Second)
	for len(ids) < 10 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		ids = programIDs(cmd.Process.Pid)
	}
	if len(ids) < 10 {
		t.Fatalf("rtscope's programs never appeared (%d)", len(ids))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline = time.Now().Add(5 * time.Second)
	left := ids
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		left = left[:0]
		for _, id := range ids {
			if p, err := ebpf.NewProgramFromID(id); err == nil {
				p.Close()
				left = append(left, id)
			}
		}
	}
	if len(left) != 0 {
		t.Errorf("%d of %d programs still loaded after SIGKILL: %v", len(left), len(ids), left)
	}
}

// programIDs lists the BPF programs a process holds, from /proc/PID/fdinfo.
func programIDs(pid int) []ebpf.ProgramID {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, _ := os.ReadDir(dir)
	var ids []ebpf.ProgramID
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "prog_id:"); ok {
				if id, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					ids = append(ids, ebpf.ProgramID(id))
				}
			}
		}
	}
	return ids
}

// --comm tracks tasks by name, including tasks that appear after watching began.
func TestCommTracksLaterTasks(t *testing.T) {
	r, _ := watchUntilReady(t, func(w *exec.Cmd) {
		scen := exec.Command(rtscope, "scenario", "run", "healthy-loop", "--duration", "1s", "-q")
		if err := scen.Start(); err != nil {
			t.Error(err)
			return
		}
		// --comm never ends by itself: stop it when the scenario is over.
		go func() {
			scen.Wait()
			time.Sleep(200 * time.Millisecond)
			w.Process.Signal(syscall.SIGINT)
		}()
	}, "--comm", "control", "-d", "120s")
	c := r.task(t, "control")
	if n := c.metric(t, "cycle").Count; n < 300 {
		t.Errorf("control tracked by name: %d cycles in 1 s of a 2 ms loop", n)
	}
	for _, tk := range r.Tasks {
		if tk.Comm != "control" {
			t.Errorf("task %s tracked without matching --comm", tk.Comm)
		}
	}
}

// Without -q a live table is printed every interval.
func TestLiveTable(t *testing.T) {
	out, err := exec.Command(rtscope, "watch", "-i", "300ms", "--show", "control", "--",
		rtscope, "scenario", "run", "healthy-loop", "--duration", "1500ms", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	if n := strings.Count(text, "elapsed, max in us"); n < 2 {
		t.Errorf("%d live tables in 1.5 s at 300 ms:\n%s", n, text)
	}
	for _, want := range []string{"LATENCY", "CYCLE", "VIOL", "control", "FIFO 80"} {
		if !strings.Contains(text, want) {
			t.Errorf("live table lacks %q", want)
		}
	}
}

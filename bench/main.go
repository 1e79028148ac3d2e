// Command bench measures what rtscope costs the machine it watches, side by
// side in one run, against the floor (empty BPF programs on the same hooks),
// peers doing less (libbpf-tools runqlat, a bpftrace run-queue latency
// script) and the origin design's published figures. `make bench` runs it;
// see bench/README.md.
//
// Configurations are interleaved (A B C A B C ...) and repeated, so that
// drifting background load on a shared machine hits them all alike.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

type bench struct {
	rtscope  string
	alt      string
	timedDir string
	version  string
	runqlat  string
	btScript string
	self     string
	tmp      string
	quick    bool
	reps     int
	cycRuns  int       // -cyclictest-runs: runs a configuration in the cyclictest phase (0: its default)
	lastStop time.Time // when the last monitor stopped (settle)
	configs  []string  // -configs: only the configurations whose names contain one of these (and "no monitor")
	ipiLoads []string  // -ipi-loads: the ipi phase's loads (default ipiLoads)
	log      io.Writer
	res      *results
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "helper" {
		runHelper(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "ipiload" {
		runIPILoad(os.Args[2:])
		return
	}
	var (
		rtscope = flag.String("rtscope", "./rtscope", "rtscope binary to measure")
		out     = flag.String("out", "", "also write the results as Markdown to this file")
		timed   = flag.String("timed", "", "directory of an instrumented rtscope build (mk/bench.mk makes it): per-run maxima and tails")
		alt     = flag.String("alt", "", "a second rtscope binary (e.g. a prototype of an engine change) measured side by side in the cost and cyclictest phases")
		dir     = flag.String("results-dir", "", "also write the results as Markdown to DIR/DATE-MACHINE.md")
		quick   = flag.Bool("quick", os.Getenv("BENCH_QUICK") == "1", "short run (about 5 minutes): fewer and shorter repetitions")
		only    = flag.String("only", "", "comma-separated phases to run (startstop,cost,ipi,tail,scaling,loss,cyclictest,cyclecost,self); default all")
		cycRuns = flag.Int("cyclictest-runs", 0, "runs of each configuration in the cyclictest phase (default 8, 1 with -quick); more narrow the interval of the paired shift (24 runs: the 8th to 17th differences)")
		reps    = flag.Int("reps", 0, "repetitions of each configuration in the cost, scaling and cyclecost phases (default 3, 1 with -quick): more narrow the medians on a shared machine")
		ipiLds  = flag.String("ipi-loads", "", "comma-separated loads of the ipi phase (mprotect,membarrier,perfcall); default all")
		configs = flag.String("configs", "", "name parts separated by | (a part ending in $: the whole name): in the cost and cyclictest phases, only the configurations whose names contain one (\"no monitor\" always runs); default all")
	)
	flag.Parse()
	if os.Geteuid() != 0 {
		fatal("bench needs root: it loads BPF programs and runs cyclictest at SCHED_FIFO 80")
	}
	if *cycRuns < 0 {
		fatal(fmt.Sprintf("-cyclictest-runs %d: want 0 (the default) or more", *cycRuns))
	}
	b := &bench{rtscope: *rtscope, alt: *alt, timedDir: *timed, quick: *quick, cycRuns: *cycRuns, log: os.Stderr, res: &results{}}
	for _, c := range strings.Split(*configs, "|") { // names hold commas
		if c != "" {
			b.configs = append(b.configs, c)
		}
	}
	for _, l := range strings.Split(*ipiLds, ",") {
		if l != "" && !isIPILoad(l) {
			fatal(fmt.Sprintf("-ipi-loads: no load %q (%s)", l, strings.Join(ipiLoads, ", ")))
		}
		if l != "" {
			b.ipiLoads = append(b.ipiLoads, l)
		}
	}
	b.reps = 3
	if b.quick {
		b.reps = 1
	}
	if *reps > 0 {
		b.reps = *reps
	}
	if err := b.setup(); err != nil {
		fatal(err.Error())
	}
	defer os.RemoveAll(b.tmp) //nolint:errcheck // best effort: a temporary file
	b.res.Machine = describeMachine()
	b.res.Version = b.version
	b.res.Quick = b.quick
	b.res.Reps = b.reps
	want := map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		if p != "" {
			want[p] = true
		}
	}
	// stats: the phase reads kernel BPF run-time statistics. They cost two
	// clock reads a program run, so the phases that measure what a watched
	// task sees (cyclictest, self) run without them, as users do.
	phases := []struct {
		name  string
		run   func() error
		stats bool
	}{
		{"startstop", b.phaseStartStop, false},
		{"cost", b.phaseCost, true},
		{"ipi", b.phaseIPI, true},
		{"tail", b.phaseTail, true},
		{"scaling", b.phaseScaling, true},
		{"loss", b.phaseLoss, true},
		{"cyclictest", b.phaseCyclictest, false},
		{"cyclecost", b.phaseCycleCost, true},
		{"self", b.phaseSelf, false},
	}
	began := time.Now()
	for _, p := range phases {
		if len(want) > 0 && !want[p.name] {
			continue
		}
		t := time.Now()
		b.logf("== %s", p.name)
		if err := runPhase(p.run, p.stats); err != nil {
			b.res.Errors = append(b.res.Errors, fmt.Sprintf("%s: %v", p.name, err))
			b.logf("%s failed: %v", p.name, err)
		}
		b.logf("== %s done in %v", p.name, time.Since(t).Round(time.Second))
	}
	b.res.Duration = time.Since(began)
	if *dir != "" && *out == "" {
		suffix := ""
		if b.quick {
			suffix = "-quick"
		}
		*out = filepath.Join(*dir, time.Now().UTC().Format("2006-01-02")+"-"+b.res.Machine.tag()+suffix+".md")
	}
	text := b.res.markdown()
	fmt.Print(text)
	if *out != "" {
		err := os.MkdirAll(filepath.Dir(*out), 0o755)
		if err == nil {
			err = os.WriteFile(*out, []byte(text), 0o644)
		}
		if err != nil {
			fatal("writing " + *out + ": " + err.Error())
		}
		b.logf("results written to %s", *out)
	}
	if len(b.res.Errors) > 0 {
		os.Exit(1)
	}
}

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, "bench: "+msg)
	os.Exit(1)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (b *bench) setup() error {
	var err error
	if b.rtscope, err = filepath.Abs(b.rtscope); err != nil {
		return err
	}
	if _, err := os.Stat(b.rtscope); err != nil {
		return fmt.Errorf("no rtscope binary at %s: run make build first", b.rtscope)
	}
	if b.tmp, err = os.MkdirTemp("", "rtscope-bench-"); err != nil {
		return err
	}
	// Measure a private copy: a `make build` elsewhere in the tree during
	// the run must not swap the binary under test halfway.
	if b.rtscope, err = snapshot(b.rtscope, filepath.Join(b.tmp, "rtscope")); err != nil {
		return err
	}
	if b.alt != "" {
		if b.alt, err = snapshot(b.alt, filepath.Join(b.tmp, "rtscope-alt")); err != nil {
			return err
		}
	}
	if out, err := exec.Command(b.rtscope, "version").Output(); err == nil {
		b.version = strings.TrimSpace(string(out))
	}
	if b.self, err = os.Executable(); err != nil {
		return err
	}
	for _, tool := range []string{"stress-ng", "cyclictest"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (make bench installs it)", tool)
		}
	}
	// libbpf-tools' runqlat (Debian libbpf-tools) is the CO-RE build of the
	// bcc tool; bcc's own runqlat-bpfcc compiles at run time and needs kernel
	// headers this kind of kernel may not have. The peers are looked for
	// here and required when a configuration runs them (startMonitor), so
	// that -only/-configs runs without them work.
	for _, c := range []string{"/usr/sbin/runqlat", "runqlat"} {
		if p, err := exec.LookPath(c); err == nil {
			b.runqlat = p
			break
		}
	}
	b.btScript = filepath.Join(b.tmp, "runqlat.bt")
	return os.WriteFile(b.btScript, []byte(bpftraceRunqlat), 0o644)
}

// bpftraceRunqlat: run-queue latency histogram, the classic bpftrace way
// (wakeup and preemption timestamps by pid, histogram at switch-in).
const bpftraceRunqlat = `tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new { @qtime[args->pid] = nsecs; }
tracepoint:sched:sched_switch {
	if (args->prev_state == 0) { @qtime[args->prev_pid] = nsecs; }
	$ns = @qtime[args->next_pid];
	if ($ns) { @usecs = hist((nsecs - $ns) / 1000); }
	delete(@qtime[args->next_pid]);
}
END { clear(@qtime); }
`

// runOrder is the order in which repetition rep runs n configurations:
// rotated by rep, so that over n repetitions each configuration runs once
// at each place and what a place brings (the host's rhythm, what ran just
// before) lands on each in turn. In a fixed order the configuration after
// the floor always paid for the floor's aftermath (settle, monitor.go).
func runOrder(rep, n int) []int {
	o := make([]int, n)
	for k := range o {
		o[k] = (k + rep) % n
	}
	return o
}

// selected keeps the configurations -configs names ("no monitor", the
// baseline, always).
func (b *bench) selected(cfgs []monitor) []monitor {
	if len(b.configs) == 0 {
		return cfgs
	}
	var out []monitor
	for _, c := range cfgs {
		keep := c.kind == "none"
		for _, part := range b.configs {
			if whole, ok := strings.CutSuffix(part, "$"); ok {
				keep = keep || c.name == whole
			} else {
				keep = keep || strings.Contains(c.name, part)
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// helper starts the threads helper: n periodic threads.
type helperProc struct {
	p    *proc
	tids []string
	idle string
}

func (b *bench) startHelper(n int, period time.Duration) (*helperProc, error) {
	c := exec.Command(b.self, "helper", fmt.Sprint(n), period.String())
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: c, done: make(chan error, 1), name: "helper"}
	h := &helperProc{p: p}
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "tids" {
			h.tids = strings.Split(f[1], ",")
		} else if len(f) == 1 && f[0] == "tids" {
			h.tids = nil
		}
		if len(f) == 2 && f[0] == "idle" {
			h.idle = f[1]
			break
		}
	}
	go func() { io.Copy(io.Discard, pipe); p.done <- c.Wait() }() //nolint:errcheck // drains a pipe until it closes
	if h.idle == "" {
		p.stop(syscall.SIGKILL) //nolint:errcheck // best effort: the process may be gone
		return nil, fmt.Errorf("the threads helper did not start")
	}
	return h, nil
}

func (h *helperProc) stop() { h.p.stop(syscall.SIGKILL) } //nolint:errcheck // best effort: the process may be gone

// tidArgs is "--tid a,b,c" for the first n periodic threads.
func (h *helperProc) tidArgs(n int) []string {
	if n == 0 {
		return nil
	}
	return []string{"--tid", strings.Join(h.tids[:n], ",")}
}

// stressNG runs stress-ng --switch for d and returns its bogo-ops per second.
func (b *bench) stressNG(workers int, d time.Duration) (float64, error) {
	out, err := exec.Command("stress-ng", "--switch", fmt.Sprint(workers), "--timeout",
		fmt.Sprintf("%ds", int(d.Seconds())), "--metrics-brief").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("stress-ng: %v: %s", err, tail(string(out), 300))
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		// stress-ng: metrc: [pid] switch BOGO REAL USR SYS OPS/S(real) OPS/S(usr+sys)
		for i := 0; i+5 < len(f); i++ {
			if f[i] == "switch" {
				var ops float64
				if _, err := fmt.Sscan(f[i+5], &ops); err == nil && ops > 0 {
					return ops, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no switch metrics in stress-ng output: %s", tail(string(out), 300))
}

// startStress starts a stress-ng --switch load that runs until stopped.
func (b *bench) startStress(workers int) (*proc, error) {
	return start("stress-ng", io.Discard, "stress-ng", "--switch", fmt.Sprint(workers), "--timeout", "1h")
}

// window measures the monitor's programs over d (or over run, when set).
type window struct {
	progs   []ProgStat
	seconds float64
	cpu     time.Duration // monitor process CPU time during the window
}

func (b *bench) measure(r *running, d time.Duration, run func() error) (window, error) {
	ids := r.objs.Progs
	a := Snapshot(ids)
	var c0 time.Duration
	if r.p != nil {
		c0 = cpuTime(r.p.pid())
	}
	t := time.Now()
	var err error
	if run != nil {
		err = run()
	} else {
		time.Sleep(d)
	}
	w := window{seconds: time.Since(t).Seconds()}
	w.progs = Delta(a, Snapshot(ids))
	if r.p != nil {
		w.cpu = cpuTime(r.p.pid()) - c0
	}
	return w, err
}

// switchProg returns the sched_switch program's delta (by name).
func switchProg(ps []ProgStat) (ProgStat, bool) {
	for _, p := range ps {
		n := strings.ToLower(p.Name)
		if (strings.Contains(n, "switch") || strings.Contains(n, "sched_swi")) && !strings.Contains(n, "legacy") {
			return p, true
		}
	}
	return ProgStat{}, false
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxf(v []float64) float64 {
	m := 0.0
	for i, x := range v {
		if i == 0 || x > m {
			m = x
		}
	}
	return m
}

func minf(v []float64) float64 {
	m := 0.0
	for i, x := range v {
		if i == 0 || x < m {
			m = x
		}
	}
	return m
}

var _ = runtime.NumCPU

// snapshot copies the executable src to dst.
func snapshot(src, dst string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	return dst, os.WriteFile(dst, b, 0o755)
}

// runPhase runs one phase, with kernel BPF run-time statistics on while it
// runs if stats. The fd-based switch (BPF_ENABLE_STATS) goes off by itself
// when the bench exits, even if killed, and leaves kernel.bpf_stats_enabled
// as it was.
func runPhase(run func() error, stats bool) error {
	if stats {
		c, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
		if err != nil {
			return fmt.Errorf("enabling kernel BPF statistics: %w", err)
		}
		defer c.Close() //nolint:errcheck // disables BPF statistics; nothing to do about a failure
	}
	return run()
}

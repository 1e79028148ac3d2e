// Package scenario holds rtscope's built-in real-time workloads: the classic
// failure modes (misconfigured priorities, hidden blocking, priority
// inversion, RT hogs, hard-IRQ noise, preemption-off sections) on demand,
// with their parameters, bounds, thread names and their own measurements.
package scenario

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/inject"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/units"
	"github.com/rtscope/rtscope/internal/workload"
)

// Kind is the type of a parameter.
type Kind int

const (
	Duration Kind = iota // nanoseconds, given with a unit ("500us", "2ms")
	Int
	Bool
)

// Guard says which way of changing a parameter from its default makes an
// injector more aggressive, and so needs --force.
type Guard int

const (
	NoGuard Guard = iota
	GuardAbove
	GuardBelow
)

// Param is one scenario parameter.
type Param struct {
	Name     string
	Help     string
	Kind     Kind
	Default  int64
	Min, Max int64
	Guard    Guard
}

// Scenario is a built-in workload.
type Scenario struct {
	Name        string
	Summary     string // one line
	Description string // one paragraph
	Params      []Param
	// Injector names the kernel mechanism the scenario uses, if any.
	Injector string
	threads  []string
	check    func(v Values) error
	run      func(e *env) error
	// unlockedMemory: the process's memory is not locked (mlockall) for
	// this scenario, whose subject is page faults.
	unlockedMemory bool
}

// Threads lists the comm names of the scenario's threads.
func (s *Scenario) Threads() []string { return append([]string(nil), s.threads...) }

// Values are the parameter values of a run, by name (durations in ns, bools 0/1).
type Values map[string]int64

// D returns a duration parameter.
func (v Values) D(name string) time.Duration { return time.Duration(v[name]) }

// I returns an integer parameter.
func (v Values) I(name string) int { return int(v[name]) }

// B returns a boolean parameter.
func (v Values) B(name string) bool { return v[name] != 0 }

// Config is a run's settings.
type Config struct {
	CPU      int           // CPU of the scenario's threads; -1: the last CPU
	Duration time.Duration // 0: until the context is cancelled
	Force    bool          // allow injection above the defaults
	Values   Values        // parameters set by the user; the rest take their defaults
	Out      io.Writer     // where the summary goes; nil: nowhere
}

// DefaultDuration is how long `scenario run` lasts without --duration.
const DefaultDuration = 10 * time.Second

// MaxDuty is the largest share of a CPU an injector may take, even with
// --force (enforced in BPF as well: inject.MaxDuty).
const MaxDuty = inject.MaxDuty

var all []*Scenario

func register(s *Scenario) { all = append(all, s) }

// All lists the scenarios in their documented order.
func All() []*Scenario { return append([]*Scenario(nil), all...) }

// Names lists the scenario names.
func Names() []string {
	var out []string
	for _, s := range all {
		out = append(out, s.Name)
	}
	return out
}

// Get returns a scenario by name.
func Get(name string) (*Scenario, error) {
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(Names(), ", "))
}

func (s *Scenario) param(name string) *Param {
	for i := range s.Params {
		if s.Params[i].Name == name {
			return &s.Params[i]
		}
	}
	return nil
}

// Us formats ns as microseconds with one decimal.
func Us(ns int64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) + " us" }

// Format shows a parameter value the way the user gives it.
func (p *Param) Format(v int64) string {
	switch p.Kind {
	case Duration:
		return Us(v)
	case Bool:
		return strconv.FormatBool(v != 0)
	}
	return strconv.FormatInt(v, 10)
}

// Bounds describes the accepted values.
func (p *Param) Bounds() string {
	if p.Kind == Bool {
		return ""
	}
	return p.Format(p.Min) + " to " + p.Format(p.Max)
}

// Resolve fills in defaults and checks every value, the CPU and the
// duration: the error is one sentence naming the culprit.
func (s *Scenario) Resolve(cfg Config) (Values, int, error) {
	v := Values{}
	for name := range cfg.Values {
		if s.param(name) == nil {
			return nil, 0, fmt.Errorf("scenario %s has no parameter --%s", s.Name, name)
		}
	}
	for _, p := range s.Params {
		x, set := cfg.Values[p.Name]
		if !set {
			x = p.Default
		}
		if p.Kind != Bool && (x < p.Min || x > p.Max) {
			return nil, 0, fmt.Errorf("--%s %s is outside its bounds (%s)", p.Name, p.Format(x), p.Bounds())
		}
		if !cfg.Force && ((p.Guard == GuardAbove && x > p.Default) || (p.Guard == GuardBelow && x < p.Default)) {
			more := "above"
			if p.Guard == GuardBelow {
				more = "below"
			}
			return nil, 0, fmt.Errorf("--%s %s is %s the default %s and loads the CPU more than the defaults: add --force if you mean it",
				p.Name, p.Format(x), more, p.Format(p.Default))
		}
		v[p.Name] = x
	}
	if s.check != nil {
		if err := s.check(v); err != nil {
			return nil, 0, err
		}
	}
	if cfg.Duration < 0 || cfg.Duration > 24*time.Hour {
		return nil, 0, fmt.Errorf("--duration %v is outside 0 (until interrupted) to 24h", cfg.Duration)
	}
	cpus, err := workload.CPUs()
	if err != nil {
		return nil, 0, fmt.Errorf("reading the CPUs this process may use: %w", err)
	}
	cpu := cfg.CPU
	if cpu < 0 {
		cpu = cpus[len(cpus)-1]
	} else if !contains(cpus, cpu) {
		return nil, 0, fmt.Errorf("CPU %d does not exist or is not usable here (usable CPUs: %s)", cpu, cpuList(cpus))
	}
	return v, cpu, nil
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func cpuList(cpus []int) string {
	var s []string
	for _, c := range cpus {
		s = append(s, strconv.Itoa(c))
	}
	return strings.Join(s, ",")
}

// durationValue parses "500us", "2ms"... into ns.
type durationValue struct{ v *int64 }

func (d durationValue) String() string { return Us(*d.v) }
func (d durationValue) Type() string   { return "duration" }
func (d durationValue) Set(s string) error {
	// The same parser as --slo: "1e3us" is a time in both, and an
	// overflow says so.
	x, err := units.ParseNs(s)
	if err != nil {
		return err
	}
	*d.v = int64(x)
	return nil
}

// cpuValue is a CPU number, "last" by default.
type cpuValue struct{ v *int }

func (c cpuValue) String() string {
	if *c.v < 0 {
		return "last"
	}
	return strconv.Itoa(*c.v)
}
func (c cpuValue) Type() string { return "N" }
func (c cpuValue) Set(s string) error {
	if s == "last" {
		*c.v = -1
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a CPU number", s)
	}
	*c.v = n
	return nil
}

// Flags returns the scenario's flags (the common ones included); after
// Parse, call Collect to fill cfg.
func (s *Scenario) Flags(cfg *Config) (*pflag.FlagSet, func()) {
	fs := pflag.NewFlagSet("scenario run "+s.Name, pflag.ContinueOnError)
	fs.SortFlags = false
	cfg.CPU = -1
	fs.Var(cpuValue{&cfg.CPU}, "cpu", "CPU to run the scenario's threads on")
	fs.DurationVar(&cfg.Duration, "duration", DefaultDuration, "how long to run (0: until Ctrl-C)")
	guarded := false
	vals := map[string]*int64{}
	bools := map[string]*bool{}
	for _, p := range s.Params {
		p := p
		help := p.Help
		if b := p.Bounds(); b != "" {
			help += " (" + b + ")"
		}
		if p.Guard != NoGuard {
			guarded = true
		}
		switch p.Kind {
		case Bool:
			bools[p.Name] = fs.Bool(p.Name, p.Default != 0, help)
		case Duration:
			x := p.Default
			vals[p.Name] = &x
			fs.Var(durationValue{&x}, p.Name, help)
		case Int:
			x := p.Default
			vals[p.Name] = &x
			fs.Int64Var(&x, p.Name, p.Default, help)
		}
	}
	if guarded {
		fs.BoolVar(&cfg.Force, "force", false, "allow injecting more than the defaults (never above the hard limits)")
	}
	collect := func() {
		cfg.Values = Values{}
		for name, x := range vals {
			if fs.Changed(name) {
				cfg.Values[name] = *x
			}
		}
		for name, b := range bools {
			if fs.Changed(name) {
				cfg.Values[name] = 0
				if *b {
					cfg.Values[name] = 1
				}
			}
		}
	}
	return fs, collect
}

// Result holds a run's own measurements, by thread name.
type Result struct {
	Scenario string
	CPU      int
	Elapsed  time.Duration
	Loops    map[string]*workload.LoopStats // periodic threads
	Stats    map[string]*workload.Stat      // other timings (event handling, lock waits...)
	Counts   map[string]int64
	Injected *inject.Stats
	Notes    []string
}

// env is what a scenario's run function works with.
type env struct {
	ctx    context.Context
	v      Values
	cpu    int
	other  int   // another CPU for helper threads (the same one on a 1-CPU machine)
	base   int64 // common time origin: every periodic thread is phased from it
	g      workload.Group
	res    *Result
	closes []func() // before the threads stop (injectors)
	after  []func() // after they stopped (collect their counters)
}

// loop starts a periodic thread whose cycle is body, phased at base+offset.
func (e *env) loop(spec workload.Spec, period time.Duration, offset time.Duration, body func(t *workload.Thread)) error {
	p := workload.NewPeriodic(e.base+int64(offset), period)
	e.res.Loops[spec.Name] = &p.Stats
	_, err := e.g.Go(spec, func(t *workload.Thread) {
		for {
			p.Wait(t)
			if t.Stopping() {
				return
			}
			body(t)
		}
	})
	return err
}

// fifo is a SCHED_FIFO spec on the scenario's CPU.
func (e *env) fifo(name string, prio int) workload.Spec {
	return workload.Spec{Name: name, CPU: e.cpu, Policy: workload.FIFO, Priority: prio}
}

// Run runs the scenario until cfg.Duration elapses or ctx is cancelled,
// then stops its threads and detaches its injectors.
func (s *Scenario) Run(ctx context.Context, cfg Config) (*Result, error) {
	v, cpu, err := s.Resolve(cfg)
	if err != nil {
		return nil, err
	}
	release, err := claimCPU(ctx, cpu)
	if err != nil {
		return nil, err
	}
	defer release()
	e := newEnv(ctx, s.Name, v, cpu)
	undo := s.prepareProcess(e)
	defer undo()
	// Phase every periodic thread from a common origin a little ahead, so
	// that the threads are all set up before the first deadline.
	e.base = (workload.Now()/int64(time.Millisecond) + 50) * int64(time.Millisecond)

	start := time.Now()
	runErr := s.run(e)
	if runErr == nil {
		e.wait(cfg.Duration)
	}
	stopErr := e.stop()
	e.res.Elapsed = time.Since(start)
	if runErr != nil {
		return nil, runErr
	}
	if stopErr != nil {
		return e.res, stopErr
	}
	if cfg.Out != nil {
		e.res.Print(cfg.Out, s)
	}
	return e.res, nil
}

// newEnv is the environment of a run on cpu, its other CPU the first other
// online one (cpu itself on a machine of one).
func newEnv(ctx context.Context, name string, v Values, cpu int) *env {
	e := &env{ctx: ctx, v: v, cpu: cpu, other: cpu,
		res: &Result{Scenario: name, CPU: cpu, Loops: map[string]*workload.LoopStats{},
			Stats: map[string]*workload.Stat{}, Counts: map[string]int64{}}}
	if cpus, _ := workload.CPUs(); len(cpus) > 1 {
		for _, c := range cpus {
			if c != cpu {
				e.other = c
				break
			}
		}
	}
	return e
}

// prepareProcess sets the process up for real-time threads, before any
// exists, and returns what undoes it, in the reverse order.
func (s *Scenario) prepareProcess(e *env) (undo func()) {
	var undos []func()
	// The set-up (mlockall, BPF loading) runs on this goroutine's thread;
	// locked, that thread never becomes one of the RT threads, whose history
	// a monitor that follows the process would otherwise report.
	runtime.LockOSThread()
	undos = append(undos, runtime.UnlockOSThread)
	// No GC, and a P for every thread: an RT thread must never wait for the
	// Go scheduler or a stop-the-world. Both calls stop the world, so they
	// come before any RT thread exists.
	gc := debug.SetGCPercent(-1)
	undos = append(undos, func() { debug.SetGCPercent(gc) })
	procs := runtime.GOMAXPROCS(0)
	if procs < 16 {
		runtime.GOMAXPROCS(16)
		undos = append(undos, func() { runtime.GOMAXPROCS(procs) })
	}
	// Memory is locked, unless the scenario is about unlocked memory.
	if !s.unlockedMemory {
		if err := workload.LockMemory(); err != nil {
			e.res.Notes = append(e.res.Notes, "warning: "+err.Error()+"; page faults may add latency")
		} else {
			undos = append(undos, workload.UnlockMemory)
		}
	}
	if restore, err := workload.KeepOff(e.cpu); err == nil {
		undos = append(undos, restore)
	}
	return func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
}

// wait returns when the run's duration (0: none) has elapsed or its
// context is cancelled.
func (e *env) wait(d time.Duration) {
	var timeout <-chan time.Time
	if d > 0 {
		// The threads also end by themselves (workload.Group.StopAt):
		// this process's timer may need a CPU their load starves.
		e.g.StopAt(workload.Now() + int64(d))
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-e.ctx.Done():
	case <-timeout:
	}
}

// stop detaches the injectors, stops the threads, and then runs what waits
// for them to be gone.
func (e *env) stop() error {
	// Injectors first: nothing may spin once the victims are gone.
	for i := len(e.closes) - 1; i >= 0; i-- {
		e.closes[i]()
	}
	err := e.g.Stop(5 * time.Second)
	if err == nil {
		for _, f := range e.after {
			f()
		}
	}
	return err
}

// lockDir holds the CPU claims of scenarios. It is root's alone (0700):
// under a world-writable $TMPDIR any user could hold a claim and block
// root's scenarios, and two processes with different TMPDIRs would not see
// each other's claims.
var lockDir = "/run/rtscope"

// openLockDir creates lockDir, or checks that the one there is a directory
// that only root can write.
func openLockDir() error { return outfile.PrivateDir(lockDir) }

// claimCPU waits until no other scenario runs on cpu (on this machine, in
// any process): two disturbances on one CPU would blur each other's
// signature. The claim is a lock file in lockDir, released when the
// process ends.
func claimCPU(ctx context.Context, cpu int) (func(), error) {
	if err := openLockDir(); err != nil {
		return nil, fmt.Errorf("claiming CPU %d: %w", cpu, err)
	}
	path := fmt.Sprintf("%s/scenario-cpu%d.lock", lockDir, cpu)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY|syscall.O_NOFOLLOW, 0o600) // flock needs no write access
	if err != nil {
		return nil, fmt.Errorf("claiming CPU %d (%s): %w", cpu, path, err)
	}
	waited := false
	for unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		if !waited {
			fmt.Fprintf(os.Stderr, "waiting for the scenario already running on CPU %d to end\n", cpu)
		}
		waited = true
		select {
		case <-ctx.Done():
			f.Close() //nolint:errcheck // on an error path: the error returned says more
			return nil, fmt.Errorf("interrupted while waiting for the scenario already running on CPU %d", cpu)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return func() { f.Close() }, nil //nolint:errcheck // releases a lock file
}

// Print writes a human summary of the run's own measurements.
func (r *Result) Print(w io.Writer, s *Scenario) {
	fmt.Fprintf(w, "scenario %s: CPU %d, %.1f s\n", r.Scenario, r.CPU, r.Elapsed.Seconds())
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	for _, name := range s.threads {
		if l := r.Loops[name]; l != nil {
			fmt.Fprintf(w, "  %-14s %6d cycles, period %s, wakeup late avg %s max %s, cycle avg %s max %s, %d overruns\n",
				name, l.Cycles, Us(l.MeanPeriod()), Us(l.LateAvg()), Us(l.LateMax), Us(l.CycleAvg()), Us(l.CycleMax), l.Overruns)
		}
	}
	keys := make([]string, 0, len(r.Stats))
	for k := range r.Stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		st := r.Stats[k]
		if st.Count == 0 {
			fmt.Fprintf(w, "  %-14s none\n", k)
			continue
		}
		fmt.Fprintf(w, "  %-14s %6d, avg %s max %s\n", k, st.Count, Us(st.Avg()), Us(st.Max))
	}
	keys = keys[:0]
	for k := range r.Counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-14s %6d\n", k, r.Counts[k])
	}
	if r.Injected != nil {
		fmt.Fprintf(w, "  %-14s %6d spins, avg %s max %s\n", "injected", r.Injected.Count,
			Us(int64(r.Injected.Total)/max(1, int64(r.Injected.Count))), Us(int64(r.Injected.Max)))
		if n := r.Injected.WrongCPU + r.Injected.OverBudget; n > 0 {
			fmt.Fprintf(w, "  %-14s %6d refused: %d on another CPU, %d over the duty budget (half of each second)\n", "",
				n, r.Injected.WrongCPU, r.Injected.OverBudget)
		}
	}
}

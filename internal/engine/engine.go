package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/metric"
)

// Exported mirrors of the BPF types.
type (
	Event  = bpfRtsEvent
	Notice = bpfRtsNotice
)

// NoticeFlagSLOViolated marks a notice whose sample is over its SLO (new maxima too).
const NoticeFlagSLOViolated = 1

// ViolationNoticeGap is the kernel's minimum spacing of one task's
// SLO-violation notices (RTS_VIOL_NOTICE_GAP_NS).
const ViolationNoticeGap = 1_000_000

// Target flags (RTS_TF_*).
const FlagFollow = 1

// Config is set before the programs are loaded.
type Config struct {
	Trace        bool                            // flight recorder + worst-case windows
	SleepStacks  bool                            // kernel stack of each tracked sleep
	StackMinWait uint64                          // ns a task waits before the stack of what runs instead is taken
	FlightPerCPU uint32                          // events kept per CPU, power of two
	SLODefault   [metric.Count]uint64            // bounds for all targets, ns (0: none)
	SLOByID      map[uint32][metric.Count]uint64 // by tid or pid
	// WarmUp is each task's start-up, whose samples are left out of its
	// metrics: 0 detects it (its loop metrics count once its period
	// settles), > 0 leaves out every sample of its first WarmUp after
	// tracking (--warm-up), < 0 leaves out nothing.
	WarmUp time.Duration
	// ViolationNotices: notice SLO violations without the flight recorder
	// too (rate-limited, as with it), for on-threshold actions. Trace
	// implies them: their windows are explained.
	ViolationNotices bool
	// TestStorageBusy (tests only): the first N task-storage creations
	// fail as if the kernel's task-storage lock were busy, which
	// preemptible kernels do at random (rts_storage_busy, compat.bpf.h).
	TestStorageBusy uint32
	// TestStatsNoMem (tests only): the first N insertions into the
	// statistics hash fail as if its per-CPU cache were empty, which a
	// PREEMPT_RT kernel does when real-time tasks starve its refill
	// (RTS_E2BIG, compat.bpf.h).
	TestStatsNoMem uint32
	// TestNoPercpuLookup (tests only) loads as on a kernel without
	// bpf_map_lookup_percpu_elem (before 5.19).
	TestNoPercpuLookup bool
	// TestNoReapply (tests only) loads as on a kernel without
	// bpf_for_each_map_elem (before 5.13).
	TestNoReapply bool
	// Engine is EngineAuto, EngineBTF or EngineClassic (--engine).
	Engine string
	// BTFFile (--btf FILE): the kernel's types from this file, for the
	// BTF engine where /sys/kernel/btf/vmlinux does not show them
	// (LoadBTFFile).
	BTFFile string
}

// DefaultStackMinWait is how long a tracked task waits for its CPU before
// the kernel stack of what runs instead is taken. The walk runs before the
// task can and costs it 1 to 20 us (20 us measured on a VM with cold caches:
// tracked, cyclictest's p99 grew from 38 to 67 us), so on-time releases and
// short waits go without; a wait worth explaining has its stack.
const DefaultStackMinWait = 100_000

// The flight recorder depth per CPU (48 bytes an event): its default and
// limits, checked by CheckFlightPerCPU (the one home of both).
const (
	DefaultFlightPerCPU = 8192
	MinFlightPerCPU     = 64
	MaxFlightPerCPU     = 1 << 20
)

// DefaultFlightBytes is the default flight recorder's kernel memory on
// machines of more than two possible CPUs: the depth per CPU is halved as
// the CPUs double (DefaultFlightFor), so that 100 tracked tasks on 4 CPUs
// stay within 2 MiB of kernel memory (issue 12), down to
// MinDefaultFlightPerCPU.
const (
	DefaultFlightBytes     = 2 * DefaultFlightPerCPU * 48
	MinDefaultFlightPerCPU = 2048
)

// DefaultFlightFor is the default depth per CPU for ncpu possible CPUs:
// DefaultFlightPerCPU up to 2 CPUs, then the largest power of two that
// keeps the rings within DefaultFlightBytes, at least
// MinDefaultFlightPerCPU.
func DefaultFlightFor(ncpu int) uint32 {
	n := uint32(DefaultFlightPerCPU)
	for n > MinDefaultFlightPerCPU && uint64(n)*uint64(max(ncpu, 1))*uint64(unsafe.Sizeof(Event{})) > DefaultFlightBytes {
		n /= 2
	}
	return n
}

// MaxFlightBytes caps the flight recorder's kernel memory, all possible
// CPUs together: a ring per possible CPU, not per online one, so that a
// large --trace-events on a machine with many possible CPUs is refused
// rather than taking gigabytes.
const MaxFlightBytes = 1 << 30

// flightEntries is the flight recorder's size in events for ncpu possible
// CPUs of perCPU events, or why that is too much (computed in 64 bits: the
// map's entry count is 32 bits wide).
func flightEntries(ncpu int, perCPU uint32) (uint32, error) {
	const event = uint64(unsafe.Sizeof(Event{}))
	total := uint64(ncpu) * uint64(perCPU)
	if total*event <= MaxFlightBytes {
		return uint32(total), nil
	}
	most := uint64(MinFlightPerCPU)
	for most*2*uint64(ncpu)*event <= MaxFlightBytes {
		most *= 2
	}
	return 0, fmt.Errorf("the flight recorder of %d events per CPU on %d possible CPUs would take %d MiB of kernel memory, above the %d MiB limit: use --trace-events %d or less",
		perCPU, ncpu, total*event>>20, MaxFlightBytes>>20, most)
}

// CheckFlightPerCPU says why n cannot be the flight recorder's depth per
// CPU: it must be a power of two from MinFlightPerCPU to MaxFlightPerCPU.
func CheckFlightPerCPU(n uint32) error {
	if n < MinFlightPerCPU || n > MaxFlightPerCPU || n&(n-1) != 0 {
		return fmt.Errorf("%d must be a power of two from %d to %d", n, MinFlightPerCPU, MaxFlightPerCPU)
	}
	return nil
}

// Features tells which optional measurements could be attached.
type Features struct {
	UserReturn        error // nil: return to user space is seen (fexit or rseq)
	UserReturnFexit   bool  // ... through fexit on hrtimer_nanosleep (any thread), else only rseq threads
	ThreadedIRQFentry error // nil: handler time exact from fentry/fexit, else scheduler-based
	LegacySwitch      bool  // sched_switch without prev_state (kernel < 5.18)
	HrtimerWakeup     bool  // hrtimer_wakeup address known: timer sleeps classified
	// WaiterStacks: nil when the kernel stack of what runs instead of a
	// waiting tracked task can be sampled (bpf_map_lookup_percpu_elem,
	// 5.19+), else why not; the task's own sleep stacks do not need it.
	WaiterStacks error
	Steal        StealClock
	// SLOReapply: nil when changed SLO bounds reach the tasks tracked
	// already (ReapplySLO), else why only tasks tracked later get them.
	SLOReapply error
	// CgroupAttach: nil when tasks moved into a wanted cgroup later are
	// tracked (the cgroup_attach_task tracepoint), else why not.
	CgroupAttach error
	// Engine is EngineBTF or EngineClassic; EngineNote says why the
	// classic one runs (forced, or no kernel BTF), empty for BTF.
	Engine     string
	EngineNote string
	// SleepReasons says how blocking sleeps are named (the kernel functions
	// of the sleep-reason table found), or why they are not.
	SleepReasons string
	// PageFaults says how page faults and memory locking are measured, or
	// why they are not (the classic engine).
	PageFaults string
}

// Engine is a loaded and attached set of rtscope programs.
type Engine struct {
	cfg  Config
	objs coreObjects // the maps and the task iterator, taken out of core
	// core is the collection of the hooks that every measurement needs
	// (the BTF engine's tp_btf programs with this kernel's sched_switch
	// variant, or the classic engine's whole object): its programs are the
	// one list that Attach and programs read.
	core *ebpf.Collection
	// optional are the BTF engine's optional program sets, each loaded on
	// its own and sharing core's maps: a missing kernel function costs its
	// feature, not the engine.
	optional []*ebpf.Collection
	reapply  *ebpf.Collection     // reapply_slo (and the classic settle_held), loaded on their own; nil: SLOReapply says why
	maps     map[string]*ebpf.Map // the core maps by name, which programs loaded later share
	links    []link.Link
	// noticeMu guards notices, queued and carries: Stats and AllStats
	// take the notices queued to find their histograms' carries, which
	// Notices would otherwise take.
	noticeMu sync.Mutex
	notices  *ringbuf.Reader
	queued   []Notice    // notices taken by Stats, for the next Notices
	carries  histCarries // histogram carries by tracking id
	flight   []byte
	ncpu     int
	// headMu guards heads, each CPU's flight ring head when Heads last
	// read it: where the next search starts.
	headMu sync.Mutex
	heads  []uint64
	// statsBufMu guards eachStats' batch buffers, kept between calls
	// (640 KB).
	statsBufMu sync.Mutex
	statsKeys  []uint64
	statsVals  []bpfRtsTaskStats
	types      *KernelTypes // --btf, else nil
	Features   Features
	mem        *memoryLayout // MemoryBytes' maps and programs, read once
	// The classic engine's identities read from live tasks (classic.go).
	identMu sync.Mutex
	ident   map[uint64]classicIdent // by tracking id
}

// coreObjects are what Assign takes out of the core collection: the maps
// every reader uses, and the BTF engine's task iterator (run by Scan, not
// attached). The hooks stay in the collection.
type coreObjects struct {
	TrackExisting *ebpf.Program `ebpf:"track_existing"`
	// UntrackExisting ends the tracking of a removed target's tasks
	// (Untrack), the target's index in UntrackTarget.
	UntrackExisting *ebpf.Program  `ebpf:"untrack_existing"`
	UntrackTarget   *ebpf.Variable `ebpf:"untrack_target"`
	// SettleHeld settles what every tracked task holds back (Detach).
	SettleHeld *ebpf.Program `ebpf:"settle_held"`
	// WantCgroups counts want_cgroup's entries (fork and exec skip the
	// cgroup walk while it is 0).
	WantCgroups *ebpf.Variable `ebpf:"want_cgroups"`
	bpfMaps
}

// Probe checks what the engines need from the kernel and the process, and
// returns one sentence naming the first thing missing. Kernel BTF is not
// needed: without it the classic engine runs (chooseEngine).
func Probe() error {
	if _, err := os.Stat("/sys/fs/bpf"); err != nil {
		if _, err := os.Stat("/proc/sys/kernel/bpf_stats_enabled"); err != nil {
			return errors.New("this kernel has no BPF support (CONFIG_BPF_SYSCALL): rtscope cannot run on it")
		}
	}
	if os.Geteuid() != 0 {
		var hdr unix.CapUserHeader
		var data [2]unix.CapUserData
		hdr.Version = unix.LINUX_CAPABILITY_VERSION_3
		if err := unix.Capget(&hdr, &data[0]); err == nil {
			eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
			if eff&(1<<unix.CAP_BPF) == 0 || eff&(1<<unix.CAP_PERFMON) == 0 {
				return errors.New("rtscope needs root, or the CAP_BPF and CAP_PERFMON capabilities, to load its BPF programs")
			}
		}
	}
	return nil
}

// probePercpuLookup says why the stack of what runs instead of a waiting
// task cannot be sampled (nil: it can): the marking needs
// bpf_map_lookup_percpu_elem (Linux 5.19; compat.bpf.h); without it the
// programs still load, the calls being dead code.
func probePercpuLookup(forceMissing bool) error {
	err := features.HaveProgramHelper(ebpf.TracePoint, asm.FnMapLookupPercpuElem)
	if forceMissing {
		err = ebpf.ErrNotSupported
	}
	if errors.Is(err, ebpf.ErrNotSupported) {
		return errors.New("this kernel lacks bpf_map_lookup_percpu_elem (Linux 5.19): the stack of what runs while a tracked task waits is not sampled")
	}
	return nil // other probe errors are inconclusive: the load says more
}

// canSettleClassic says whether the classic engine's settle_held can run
// (bpf_for_each_map_elem, Linux 5.13): only then may its tasks hold their
// samples until they leave their CPU (hold_samples). forceMissing: tests,
// as TestNoReapply.
func canSettleClassic(forceMissing bool) bool {
	return !forceMissing && features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnForEachMapElem) == nil
}

// Load loads the programs with cfg (nothing is attached yet).
func Load(cfg Config) (*Engine, error) {
	if err := Probe(); err != nil {
		return nil, err
	}
	kind, why, err := chooseEngine(cfg.Engine, cfg.BTFFile)
	if err != nil {
		return nil, err
	}
	var types *KernelTypes
	if cfg.BTFFile != "" {
		if types, err = LoadBTFFile(cfg.BTFFile); err != nil {
			return nil, err
		}
	}
	_ = rlimit.RemoveMemlock() // pre-5.11 kernels charge BPF memory to RLIMIT_MEMLOCK
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("counting CPUs: %w", err)
	}
	if cfg.FlightPerCPU == 0 {
		cfg.FlightPerCPU = DefaultFlightFor(ncpu)
	}
	if err := CheckFlightPerCPU(cfg.FlightPerCPU); err != nil {
		return nil, fmt.Errorf("flight recorder depth: %w", err)
	}
	if err := features.HaveMapType(ebpf.TaskStorage); err != nil && kind == EngineBTF {
		if errors.Is(err, ebpf.ErrNotSupported) {
			return nil, errors.New("this kernel lacks BPF task storage, which rtscope needs (Linux 5.11 or later)")
		}
		if errors.Is(err, unix.EPERM) {
			return nil, errors.New("the kernel refused to create BPF maps (EPERM): run as root or with CAP_BPF and CAP_PERFMON")
		}
	}
	if err := features.HaveMapType(ebpf.RingBuf); errors.Is(err, ebpf.ErrNotSupported) {
		return nil, errors.New("this kernel lacks the BPF ring buffer, which rtscope needs (Linux 5.8 or later)")
	}
	e := &Engine{cfg: cfg, ncpu: ncpu, types: types, carries: histCarries{}}
	e.Features.Engine, e.Features.EngineNote = kind, why

	syms, _ := ksym.Kernel()
	wake := syms.Addr("hrtimer_wakeup")
	e.Features.HrtimerWakeup = wake != 0
	e.Features.WaiterStacks = probePercpuLookup(cfg.TestNoPercpuLookup)
	vars := map[string]any{
		"trace_enabled":     cfg.Trace,
		"violation_notices": cfg.Trace || cfg.ViolationNotices,
		"sleep_stacks":      cfg.SleepStacks && cfg.Trace,
		"waiter_stacks":     e.Features.WaiterStacks == nil,
		"flight_per_cpu":    cfg.FlightPerCPU,
		"stack_min_wait_ns": cfg.StackMinWait,
		"hrtimer_wakeup_fn": wake,
		"slo_default":       cfg.SLODefault,
		"warm_up_ns":        warmUpNs(cfg.WarmUp),
		"test_storage_busy": cfg.TestStorageBusy,
		"test_stats_nomem":  cfg.TestStatsNoMem,
		"hold_samples":      kind == EngineBTF || canSettleClassic(cfg.TestNoReapply),
	}
	sleeps := newSleepTable(syms)
	sleeps.vars(vars)
	e.Features.SleepReasons = sleeps.describe()
	e.Features.PageFaults = "counted per task at each switch-out from task_struct min_flt/maj_flt, memory locking read from its mm; " +
		"their time is not measured (no page-fault exit tracepoint)"
	if kind == EngineClassic {
		e.Features.PageFaults = "not measured: the classic engine reads no kernel structure (task_struct's fault counters, the mm's locking)"
	}
	entries := uint32(1)
	if cfg.Trace {
		n, err := flightEntries(ncpu, cfg.FlightPerCPU)
		if err != nil {
			return nil, err
		}
		entries = n
	}
	var spec *ebpf.CollectionSpec
	if kind == EngineClassic {
		e.Features.Steal = StealClock{Method: "unreadable: the classic engine (no kernel BTF) cannot reach the run queue's steal clock"}
		e.Features.ThreadedIRQFentry = errors.New("the classic engine has no fentry")
		if spec, err = e.loadClassic(vars, entries); err != nil {
			return nil, err
		}
	} else {
		if spec, err = e.loadBTF(vars, entries); err != nil {
			return nil, err
		}
	}
	e.Features.SLOReapply = e.loadReapply(spec)
	return e.finishLoad(entries)
}

// loadBTF loads rtscope.bpf.c: the core programs, then each optional set.
// It returns the spec with its settings, for loadReapply.
func (e *Engine) loadBTF(vars map[string]any, entries uint32) (*ebpf.CollectionSpec, error) {
	spec, err := loadBpf()
	if err != nil {
		return nil, err
	}
	kspec, err := e.kernelSpec()
	if err != nil {
		return nil, fmt.Errorf("reading kernel BTF: %w", err)
	}
	e.Features.Steal = stealClock(kspec)
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	spec.Maps["flight"].MaxEntries = entries

	legacy, err := legacySchedSwitch(kspec)
	if err != nil {
		return nil, err
	}
	e.Features.LegacySwitch = legacy
	switchName := "on_sched_switch"
	if legacy {
		switchName = "on_sched_switch_legacy"
	}
	// Load only what this kernel runs: the optional programs separately, so
	// a missing kernel function costs a feature, not the whole engine.
	core := spec.Copy()
	optionalNames := []string{"on_nanosleep_exit", "on_rseq_update", "on_irq_thread_fn", "on_irq_thread_fn_exit",
		"on_irq_forced_thread_fn", "on_irq_forced_thread_fn_exit", "on_cgroup_attach_task"}
	for _, n := range append(optionalNames, "on_sched_switch", "on_sched_switch_legacy", "reapply_slo") {
		delete(core.Programs, n)
	}
	core.Programs[switchName] = spec.Programs[switchName]
	coll, err := ebpf.NewCollectionWithOptions(core, e.types.Options())
	if err != nil {
		return nil, explainLoadError(err)
	}
	// The optional programs must share these maps: take them before Assign
	// moves them out of the collection.
	maps := map[string]*ebpf.Map{}
	for name, m := range coll.Maps {
		maps[name] = m
	}
	e.maps = maps
	if err := coll.Assign(&e.objs); err != nil {
		coll.Close()
		return nil, err
	}
	e.core = coll

	loadOptional := func(names ...string) error {
		sub := spec.Copy()
		sub.Programs = map[string]*ebpf.ProgramSpec{}
		for _, n := range names {
			sub.Programs[n] = spec.Programs[n]
		}
		opts := e.types.Options()
		opts.MapReplacements = maps
		c, err := ebpf.NewCollectionWithOptions(sub, opts)
		if err != nil {
			return err
		}
		e.optional = append(e.optional, c)
		return nil
	}
	// Return to user space: fexit on the sleep syscall where trampolines are
	// allowed, and the rseq tracepoint (threads with rseq, i.e. glibc >= 2.35).
	fexitErr := loadOptional("on_nanosleep_exit")
	rseqErr := loadOptional("on_rseq_update")
	e.Features.UserReturnFexit = fexitErr == nil
	if fexitErr != nil && rseqErr != nil {
		e.Features.UserReturn = fmt.Errorf("neither fexit on hrtimer_nanosleep (%v) nor the rseq_update tracepoint (%v) can be used", fexitErr, rseqErr)
	}
	// Threaded IRQ handlers: exact with fentry/fexit; otherwise the engine
	// falls back to the on-CPU time of each activation of the irq/N thread.
	e.Features.ThreadedIRQFentry = loadOptional("on_irq_thread_fn", "on_irq_thread_fn_exit",
		"on_irq_forced_thread_fn", "on_irq_forced_thread_fn_exit")
	// Tasks moved into a wanted cgroup; without it, cgroup targets get the
	// tasks there at each Scan and their children only.
	if err := loadOptional("on_cgroup_attach_task"); err != nil {
		e.Features.CgroupAttach = fmt.Errorf("the cgroup_attach_task tracepoint cannot be used (%v): tasks moved into a watched cgroup later are not tracked", err)
	}
	return spec, nil
}

// loadReapply loads reapply_slo from spec (either engine's, with its
// settings) on the engine's maps, in a collection of its own: a kernel
// without bpf_for_each_map_elem (5.13) loses that feature only, and Attach
// never sees the program (it is run, not attached). It returns why the
// feature is missing, nil when it is there.
func (e *Engine) loadReapply(spec *ebpf.CollectionSpec) error {
	missing := errors.New("this kernel lacks bpf_for_each_map_elem (Linux 5.13): changed SLO bounds apply to the tasks tracked from then on, not to those tracked already")
	if e.cfg.TestNoReapply {
		return missing
	}
	sub := spec.Copy()
	sub.Programs = map[string]*ebpf.ProgramSpec{"reapply_slo": spec.Programs["reapply_slo"]}
	if p := spec.Programs["settle_held"]; p != nil && p.Type == ebpf.RawTracepoint {
		sub.Programs["settle_held"] = p // the classic engine's: bpf_for_each_map_elem too
	}
	opts := e.types.Options()
	opts.MapReplacements = e.maps
	c, err := ebpf.NewCollectionWithOptions(sub, opts)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) || errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%w (%v)", missing, err)
		}
		return fmt.Errorf("loading reapply_slo: %w", err)
	}
	e.reapply = c
	return nil
}

// finishLoad maps the flight recorder, sets the SLOs and opens the notices:
// the same for both engines, whose maps are in e.objs.bpfMaps.
func (e *Engine) finishLoad(entries uint32) (*Engine, error) {
	cfg := e.cfg
	var err error
	if cfg.Trace {
		size := int(entries) * int(unsafe.Sizeof(Event{}))
		page := os.Getpagesize()
		size = (size + page - 1) / page * page
		e.flight, err = unix.Mmap(e.objs.Flight.FD(), 0, size, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("mapping the flight recorder: %w", err)
		}
	}
	for id, b := range cfg.SLOByID {
		if err := e.SetSLO(id, b); err != nil {
			e.Close()
			return nil, err
		}
	}
	e.notices, err = ringbuf.NewReader(e.objs.Notices)
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func explainLoadError(err error) error {
	var ve *ebpf.VerifierError
	switch {
	case errors.Is(err, unix.EPERM):
		return errors.New("the kernel refused to load rtscope's BPF programs (EPERM): run as root or with CAP_BPF and CAP_PERFMON")
	case errors.As(err, &ve):
		return fmt.Errorf("the kernel's verifier rejected rtscope's programs: %+v", ve)
	case strings.Contains(err.Error(), "task_storage") || strings.Contains(err.Error(), "TaskStorage"):
		return fmt.Errorf("this kernel lacks BPF task storage (needs Linux 5.11 or later): %w", err)
	}
	return fmt.Errorf("loading BPF programs: %w", err)
}

// legacySchedSwitch tells whether sched_switch lacks its prev_state
// argument (< 5.18) in the kernel's types spec.
func legacySchedSwitch(spec *btf.Spec) (bool, error) {
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_sched_switch", &td); err != nil {
		return false, fmt.Errorf("kernel BTF has no sched_switch tracepoint: %w", err)
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return false, nil
	}
	fp, ok := ptr.Target.(*btf.FuncProto)
	if !ok {
		return false, nil
	}
	return len(fp.Params) < 5, nil
}

// Attach attaches every loaded program. Links die with the process: nothing
// stays attached after exit, even after SIGKILL. An optional program that
// loads but cannot attach (arm64 kernels without BPF trampolines) costs its
// feature only.
func (e *Engine) Attach() error {
	if e.Features.Engine == EngineClassic {
		return e.attachClassic()
	}
	links, err := attachTracing(e.core)
	if err != nil {
		return err
	}
	e.links = links
	for _, c := range e.optional {
		links, err := attachTracing(c)
		if err != nil {
			e.optionalFailed(c, err)
			continue
		}
		e.links = append(e.links, links...)
	}
	return nil
}

// attachTracing attaches every tp_btf/fentry/fexit program of c, all or
// none, in name order (one order on every run).
func attachTracing(c *ebpf.Collection) ([]link.Link, error) {
	names := make([]string, 0, len(c.Programs))
	for name := range c.Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	var links []link.Link
	for _, name := range names {
		l, err := link.AttachTracing(link.TracingOptions{Program: c.Programs[name]})
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			return nil, fmt.Errorf("attaching %s: %w", name, err)
		}
		links = append(links, l)
	}
	return links, nil
}

// optionalFailed records which feature an unattachable optional collection costs.
func (e *Engine) optionalFailed(c *ebpf.Collection, err error) {
	for name := range c.Programs {
		switch name {
		case "on_nanosleep_exit":
			e.Features.UserReturnFexit = false
		case "on_rseq_update":
			if !e.Features.UserReturnFexit {
				e.Features.UserReturn = err
			}
		case "on_cgroup_attach_task":
			e.Features.CgroupAttach = err
		default:
			e.Features.ThreadedIRQFentry = err
		}
	}
}

// Detach stops the programs; the maps stay readable until Close, so that
// the last notices, windows and statistics of a run can be read while
// nothing overwrites them. It then settles what the tracked tasks still
// hold (settleHeld), so that those statistics are complete; a second call
// does nothing. Not safe for concurrent use with Attach or Close.
func (e *Engine) Detach() error {
	if !e.closeLinks() {
		return nil
	}
	return e.settleHeld()
}

// closeLinks stops the programs; it says whether any was attached.
func (e *Engine) closeLinks() bool {
	attached := len(e.links) > 0
	for _, l := range e.links {
		l.Close()
	}
	e.links = nil
	return attached
}

// settleHeld records into their statistics the samples that tracked tasks
// took on their way to a CPU and hold until they leave it (hold_samples in
// maps.bpf.h): those of a task still on its CPU at the end of a run.
// Without bpf_for_each_map_elem the classic engine holds none.
func (e *Engine) settleHeld() error {
	if e.objs.SettleHeld != nil { // the BTF engine: over every task
		if err := runTaskIter(e.objs.SettleHeld, nil); err != nil {
			return fmt.Errorf("settling held samples: %w", err)
		}
		return nil
	}
	if e.reapply == nil || e.reapply.Programs["settle_held"] == nil {
		return nil
	}
	if _, err := e.reapply.Programs["settle_held"].Run(&ebpf.RunOptions{}); err != nil {
		return fmt.Errorf("settling held samples: %w", err)
	}
	return nil
}

// Close detaches and frees everything.
func (e *Engine) Close() {
	e.closeLinks() // nothing to settle: the statistics are about to be freed
	if e.notices != nil {
		e.notices.Close()
	}
	if e.flight != nil {
		_ = unix.Munmap(e.flight) // at close: nothing to do about a failure
		e.flight = nil
	}
	if e.core != nil {
		e.core.Close()
		e.core = nil
	}
	for _, c := range e.optional {
		c.Close()
	}
	e.optional = nil
	if e.reapply != nil {
		e.reapply.Close()
		e.reapply = nil
	}
	// Assign moved the task iterator and the maps out of their collection,
	// whose Close no longer reaches them: without this they stayed loaded
	// until the garbage collector ran (10 -> 50 fds after one
	// Load/Attach/Close; demo runs several engines in one process).
	closeObjects(&e.objs)
	e.objs.bpfMaps.Close() //nolint:errcheck // BPF objects: closing frees them whatever close returns
}

// closeObjects closes every exported *ebpf.Program and *ebpf.Map field of
// the struct v points to (closing twice is harmless).
func closeObjects(v any) {
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if !f.CanInterface() {
			continue // unexported, e.g. the embedded generated maps: closed by their own Close
		}
		switch x := f.Interface().(type) {
		case *ebpf.Program:
			if x != nil {
				x.Close()
			}
		case *ebpf.Map:
			if x != nil {
				x.Close()
			}
		}
	}
}

// Want registers targets: tids, processes (tgid) and names. Call Scan after
// to pick up the tasks that already exist; later ones are caught at fork,
// exec and rename.
func (e *Engine) WantTID(tid uint32, target uint32, flags uint32) error {
	return full(e.objs.WantTid.Put(tid, bpfRtsTarget{Index: target, Flags: flags}), e.objs.WantTid, "threads")
}

func (e *Engine) WantTGID(pid uint32, target uint32) error {
	return full(e.objs.WantTgid.Put(pid, bpfRtsTarget{Index: target}), e.objs.WantTgid, "processes")
}

// full names the limit when a target map is full (the kernel says E2BIG:
// "argument list too long").
func full(err error, m *ebpf.Map, what string) error {
	if errors.Is(err, unix.E2BIG) {
		return fmt.Errorf("at most %d %s can be watched", m.MaxEntries(), what)
	}
	return err
}

func (e *Engine) WantComm(comm string, target uint32) error {
	var key [16]byte
	copy(key[:15], comm)
	return full(e.objs.WantComm.Put(key, bpfRtsTarget{Index: target}), e.objs.WantComm, "task names")
}

// ErrCgroupClassic: the classic engine reads no kernel structure, so it
// cannot tell a task's cgroup.
var ErrCgroupClassic = errors.New("cgroup targets need the BTF engine (kernel BTF): the classic engine cannot tell a task's cgroup")

// WantCgroup registers a cgroup target by its cgroup v2 id (its
// directory's inode number, target.Cgroup): every task in it or in a
// cgroup below it, found by Scan, at fork and exec, and when it moves in
// (Features.CgroupAttach).
func (e *Engine) WantCgroup(id uint64, target uint32) error {
	if e.Features.Engine == EngineClassic {
		return ErrCgroupClassic
	}
	if err := e.objs.WantCgroup.Put(id, bpfRtsTarget{Index: target}); err != nil {
		return full(err, e.objs.WantCgroup, "cgroups")
	}
	return e.countCgroups()
}

// ForgetCgroup removes a cgroup target: tasks that enter it later are not
// tracked; those tracked already stay tracked until they exit.
func (e *Engine) ForgetCgroup(id uint64) {
	if e.Features.Engine == EngineClassic {
		return
	}
	_ = e.objs.WantCgroup.Delete(id)
	_ = e.countCgroups() // a stale count costs a walk at fork, nothing else
}

// countCgroups sets want_cgroups to want_cgroup's entries.
func (e *Engine) countCgroups() error {
	var n uint32
	var k uint64
	var v bpfRtsTarget
	for it := e.objs.WantCgroup.Iterate(); it.Next(&k, &v); {
		n++
	}
	if err := e.objs.WantCgroups.Set(n); err != nil {
		return fmt.Errorf("counting cgroup targets: %w", err)
	}
	return nil
}

// ForgetTID removes a tid target (so that a reused tid is not tracked again).
func (e *Engine) ForgetTID(tid uint32) {
	_ = e.objs.WantTid.Delete(tid)
}

// ForgetTGID and ForgetComm remove a process or name target: tasks that
// appear later are not tracked; those tracked already stay tracked until
// they exit, so that their counters never go back.
func (e *Engine) ForgetTGID(pid uint32) {
	_ = e.objs.WantTgid.Delete(pid)
}

// ForgetComm: see ForgetTGID.
func (e *Engine) ForgetComm(comm string) {
	var key [16]byte
	copy(key[:15], comm)
	_ = e.objs.WantComm.Delete(key)
}

// SetSLO sets the bounds of tid or pid id (ns, 0: none), overriding the
// defaults, for the tasks tracked from now on: a tracked task copies its
// bounds when its tracking starts (ReapplySLO gives them to the tasks
// tracked already).
func (e *Engine) SetSLO(id uint32, bounds [metric.Count]uint64) error {
	v := bpfRtsSlo{Bound: bounds}
	if err := e.objs.SloById.Put(id, &v); err != nil {
		return fmt.Errorf("setting the SLO of %d: %w", id, full(err, e.objs.SloById, "ids with SLOs of their own"))
	}
	return nil
}

// ForgetSLO removes the bounds of id: tasks tracked from now on get the
// defaults.
func (e *Engine) ForgetSLO(id uint32) {
	_ = e.objs.SloById.Delete(id)
}

// sloDefaultKey is the slo_by_id key of the run-time default bounds
// (RTS_SLO_DEFAULT_KEY): no tracked task has tid or pid 0.
const sloDefaultKey = uint32(0)

// SetSLODefault replaces the default bounds (Config.SLODefault, a
// read-only constant of the loaded programs) for the tasks tracked from
// now on; ReapplySLO gives them to those tracked already.
func (e *Engine) SetSLODefault(bounds [metric.Count]uint64) error {
	v := bpfRtsSlo{Bound: bounds}
	if err := e.objs.SloById.Put(sloDefaultKey, &v); err != nil {
		return fmt.Errorf("setting the default SLO: %w", full(err, e.objs.SloById, "ids with SLOs of their own"))
	}
	return nil
}

// ReapplySLO sets every tracked task's bounds again from SetSLO,
// ForgetSLO and SetSLODefault, keeping its counts and violations so far.
// It returns the number of tasks changed, or Features.SLOReapply when the
// kernel cannot (then only tasks tracked later get the new bounds).
// One BPF_PROG_TEST_RUN: 0.3-0.5 ms for 6 tasks here (TestReapplySLO),
// off the hot path (the kernel reads each task's bounds from its statistics).
func (e *Engine) ReapplySLO() (int, error) {
	if e.reapply == nil {
		return 0, e.Features.SLOReapply
	}
	ret, err := e.reapply.Programs["reapply_slo"].Run(&ebpf.RunOptions{Context: []uint64{0}})
	if err != nil {
		return 0, fmt.Errorf("running reapply_slo: %w", err)
	}
	return int(int32(ret)), nil
}

// Scan runs the task iterator: every existing task that matches a target starts being tracked.
func (e *Engine) Scan() error { return e.ScanWith(nil) }

// ScanBatch is how many tasks ScanWith tracks between two calls of its
// function: at 1000 tracked threads beside stress-ng --switch 2 the scan
// took 11-24 ms, longer than a flight recorder ring lasts there (17 ms).
const ScanBatch = 64

// ScanWith is Scan, calling between (when not nil) each time up to
// ScanBatch more tasks were tracked, on the caller's goroutine: a session
// polls there, so that the first windows of the tasks tracked early are
// cut before the rings wrap.
func (e *Engine) ScanWith(between func()) error {
	if e.Features.Engine == EngineClassic {
		return e.scanClassic(between)
	}
	return runTaskIter(e.objs.TrackExisting, between)
}

// runTaskIter runs a task iterator program over every task, to the end,
// calling between (when not nil) after each read that returned output.
func runTaskIter(prog *ebpf.Program, between func()) error {
	it, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		return fmt.Errorf("task iterator: %w", err)
	}
	defer it.Close() //nolint:errcheck // BPF iterator link
	r, err := it.Open()
	if err != nil {
		return err
	}
	defer r.Close() //nolint:errcheck // read-only
	return readIter(r, between)
}

// Untrack stops tracking the tasks that the target of index target
// selected, once it was removed (ForgetTID, ForgetTGID, ForgetComm,
// ForgetCgroup): each ends as if it exited (its statistics marked exited,
// an exit notice queued: the session reports and forgets them), unless
// another target still wants it, which it then counts under. The classic
// engine cannot walk the tasks: there they stay tracked until they exit
// (Features.Engine). Call it on the session's goroutine.
func (e *Engine) Untrack(target uint32) error {
	if e.Features.Engine == EngineClassic {
		return nil
	}
	if err := e.objs.UntrackTarget.Set(target); err != nil {
		return fmt.Errorf("untracking target %d: %w", target, err)
	}
	return runTaskIter(e.objs.UntrackExisting, nil)
}

// readIter reads a task iterator to its end: reading runs the program on
// every task. track_existing writes a byte a task tracked, and a read
// returns once it holds ScanBatch of them (bpf_seq_read stops at the size
// asked), so between runs every ScanBatch tasks tracked; untrack_existing
// writes nothing. io.EOF is that end. EAGAIN is the kernel pausing a read
// that visited a million objects without output (bpf_seq_read,
// MAX_ITER_OBJECTS): the next read goes on from there (the programs always
// return 0, so it is never a program's retry). Any other error leaves
// tasks unscanned and is returned.
func readIter(r io.Reader, between func()) error {
	buf := make([]byte, ScanBatch)
	for {
		n, err := r.Read(buf)
		if n > 0 && between != nil {
			between()
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, unix.EAGAIN):
			continue
		case err != nil:
			return fmt.Errorf("task iterator: %w", err)
		}
	}
}

// Stats returns the statistics of tracking id. Safe for concurrent use.
func (e *Engine) Stats(id uint64) (*TaskStats, error) {
	e.noticeMu.Lock()
	defer e.noticeMu.Unlock()
	// The carries queued before the statistics are read are theirs.
	if err := e.takeNotices(time.Now()); err != nil {
		return nil, err
	}
	var k bpfRtsTaskStats
	if err := e.lookupStats(id, &k); err != nil {
		return nil, err
	}
	return e.joined(id, &k)
}

// AllStats returns the statistics of every tracked task. Safe for
// concurrent use.
func (e *Engine) AllStats() ([]*TaskStats, error) {
	e.noticeMu.Lock()
	defer e.noticeMu.Unlock()
	if err := e.takeNotices(time.Now()); err != nil {
		return nil, err
	}
	var out []*TaskStats
	err := e.eachStats(func(id uint64, k *bpfRtsTaskStats) error {
		s, err := e.joined(id, k) // copied out of k
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil // forgotten while its carry was awaited
		}
		if err == nil {
			out = append(out, s)
		}
		return err
	})
	return out, err
}

// Forget drops a task's statistics after its final report.
func (e *Engine) Forget(id uint64) {
	_ = e.objs.Stats.Delete(id)
	e.noticeMu.Lock()
	delete(e.carries, id)
	e.noticeMu.Unlock()
	e.identMu.Lock()
	delete(e.ident, id)
	e.identMu.Unlock()
}

// Notices returns the notices queued until deadline (BPF never wakes us
// up), histogram carries aside (Stats adds them). Safe for concurrent use;
// Stats and AllStats wait while it waits for a deadline still to come.
func (e *Engine) Notices(deadline time.Time) ([]Notice, error) {
	e.noticeMu.Lock()
	defer e.noticeMu.Unlock()
	err := e.takeNotices(deadline)
	out := e.queued
	e.queued = nil
	return out, err
}

// HoldNotices moves the notices queued in the kernel's ring into the
// engine's own queue, where the next Notices returns them in order. A poll
// busy cutting windows calls it between them: the ring holds about 2300
// notices, and 1000 threads' first maxima can fill it while the poll
// works. Cheap when nothing is queued (the mapped ring's positions only).
func (e *Engine) HoldNotices() error {
	e.noticeMu.Lock()
	defer e.noticeMu.Unlock()
	return e.takeNotices(time.Now())
}

// takeNotices reads the notices queued until deadline into e.queued, and
// their histogram carries into e.carries. Called with noticeMu held.
func (e *Engine) takeNotices(deadline time.Time) error {
	if !time.Now().Before(deadline) && e.notices.AvailableBytes() == 0 {
		// Nothing queued and no wait: read from the mapped ring's
		// positions, without the epoll call a read makes (a hundred polls
		// a second).
		return nil
	}
	var rec ringbuf.Record
	e.notices.SetDeadline(deadline)
	for {
		err := e.notices.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(rec.RawSample) < int(unsafe.Sizeof(Notice{})) {
			continue
		}
		n := *(*Notice)(unsafe.Pointer(&rec.RawSample[0]))
		switch {
		case n.Type == noticeHistCarry:
			e.carries.add(&n)
		case n.Type == NoticeTaskStart && e.Features.Engine == EngineClassic:
			e.classicLearn(n.Id, n.Tid)
			fallthrough
		default:
			e.queued = append(e.queued, n)
		}
		// Drain what is there without waiting again.
		e.notices.SetDeadline(time.Now())
	}
}

// Counters returns the lost/refused counters summed over CPUs.
func (e *Engine) Counters() [counterCount]uint64 {
	var out [counterCount]uint64
	for i := range out {
		out[i] = e.Counter(i)
	}
	return out
}

// Counter returns one counter (Counter*) summed over CPUs (0 when
// unreadable): one lookup, where Counters takes one per counter.
func (e *Engine) Counter(i int) uint64 {
	var per []uint64
	var sum uint64
	if err := e.objs.Counters.Lookup(uint32(i), &per); err == nil {
		for _, v := range per {
			sum += v
		}
	}
	return sum
}

// NumCPU is the number of possible CPUs (flight recorder rings).
func (e *Engine) NumCPU() int { return e.ncpu }

// FlightPerCPU is the depth of each CPU's ring.
func (e *Engine) FlightPerCPU() uint32 { return e.cfg.FlightPerCPU }

// Heads returns the next sequence number of each CPU's flight ring: found
// in the mapped rings (ringHead), and read from the per-CPU state only for
// a ring that lapped since the previous call. Safe for concurrent use.
func (e *Engine) Heads() ([]uint64, error) {
	e.headMu.Lock()
	defer e.headMu.Unlock()
	if e.flight == nil {
		return nil, errors.New("the flight recorder is off")
	}
	if len(e.heads) != e.ncpu {
		e.heads = make([]uint64, e.ncpu)
	}
	lapped := false
	for cpu := range e.heads {
		h, ok := ringHead(e.FlightRing(cpu), e.heads[cpu])
		e.heads[cpu], lapped = h, lapped || !ok
	}
	if lapped {
		var per []bpfRtsCpuState
		if err := e.objs.Cpus.Lookup(uint32(0), &per); err != nil {
			return nil, err
		}
		for cpu := range min(len(per), len(e.heads)) {
			e.heads[cpu] = per[cpu].Seq
		}
	}
	return slices.Clone(e.heads), nil
}

// FlightRing returns cpu's ring in place: slot i holds the event of
// sequence number i modulo FlightPerCPU, or one older or newer. It is the
// mapped map, which BPF writes while it is read (a reader checks each
// event's Seq), valid until Close. Reading it in place lets a reader copy
// slices instead of an event at a time (trace.TakeInto).
func (e *Engine) FlightRing(cpu int) []Event {
	n := int(e.cfg.FlightPerCPU)
	all := unsafe.Slice((*Event)(unsafe.Pointer(&e.flight[0])), len(e.flight)/int(unsafe.Sizeof(Event{})))
	return all[cpu*n : (cpu+1)*n]
}

// BTFOptions are the collection options that give another collection
// loaded beside the engine the kernel types the engine uses (--btf).
func (e *Engine) BTFOptions() ebpf.CollectionOptions { return e.types.Options() }

// Tracing tells whether the flight recorder is on.
func (e *Engine) Tracing() bool { return e.flight != nil }

// StackIDs resolves a stack id of the stacks map to kernel addresses.
func (e *Engine) Stack(id uint32) ([]uint64, error) {
	frames := make([]uint64, e.objs.Stacks.ValueSize()/8) // RTS_STACK_DEPTH
	if err := e.objs.Stacks.Lookup(id, frames); err != nil {
		return nil, err
	}
	var out []uint64
	for _, f := range frames {
		if f == 0 {
			break
		}
		out = append(out, f)
	}
	return out, nil
}

// MemoryBytes is the kernel memory of the engine's maps and programs, as
// the kernel reports it (memlock). Each map is counted once, although the
// optional program collections share them. Only the hash maps without
// preallocation grow with their entries (the kernel's map_mem_usage): the
// rest is read once and remembered, as reading every map's and program's
// information took 1-4 ms, the agent's largest cost at each tick
// (BenchmarkAgentReads). Call it on one goroutine at a time.
func (e *Engine) MemoryBytes() uint64 {
	if e.mem == nil {
		e.mem = e.memoryLayout()
	}
	total := e.mem.fixed
	for _, m := range e.mem.growing {
		total += mapMemlock(m)
	}
	return total
}

// memoryLayout is what MemoryBytes reads once: the programs' and fixed
// maps' memory, and which maps to read again.
type memoryLayout struct {
	fixed   uint64
	growing []*ebpf.Map
}

func (e *Engine) memoryLayout() *memoryLayout {
	ml := &memoryLayout{}
	seen := map[ebpf.MapID]bool{}
	for _, m := range e.loadedMaps() {
		info, err := m.Info()
		if err != nil {
			continue
		}
		if id, ok := info.ID(); ok {
			if seen[id] {
				continue
			}
			seen[id] = true
		}
		if info.Flags&unix.BPF_F_NO_PREALLOC != 0 && (info.Type == ebpf.Hash || info.Type == ebpf.PerCPUHash) {
			ml.growing = append(ml.growing, m)
			continue
		}
		if v, ok := info.Memlock(); ok {
			ml.fixed += v
		}
	}
	for _, p := range e.programs() {
		if info, err := p.Info(); err == nil {
			if v, ok := info.Memlock(); ok {
				ml.fixed += v
			}
		}
	}
	return ml
}

// mapMemlock is m's kernel memory now (0 when unreadable).
func mapMemlock(m *ebpf.Map) uint64 {
	info, err := m.Info()
	if err != nil {
		return 0
	}
	v, _ := info.Memlock()
	return v
}

// CommString converts a kernel comm array to a string.
func CommString(c [16]int8) string {
	b := make([]byte, 0, 16)
	for _, ch := range c {
		if ch == 0 {
			break
		}
		b = append(b, byte(ch))
	}
	return string(b)
}

// EventX and EventY read the two 64-bit words that share the comm field of
// an event (timer function and expiry, armed expiry).
func EventX(e *Event) uint64 { return *(*uint64)(unsafe.Pointer(&e.Comm[0])) }

// EventY: see EventX.
func EventY(e *Event) uint64 { return *(*uint64)(unsafe.Pointer(&e.Comm[8])) }

// EventStackID is the stack id of a sleep (B) or stack event (C, 16
// bits: 0xffff is none), -1 when none was taken or for another type.
func EventStackID(e *Event) int32 {
	switch e.Type {
	case EventSleep:
		return int32(e.B)
	case EventStack:
		return int32(int16(e.C))
	}
	return -1
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// Identity is a policy and normal kernel priority a task ran with.
type Identity struct {
	Policy uint32
	Prio   int // kernel priority: 0..98 RT, 100..139 normal, -1 deadline
}

// SchedSeen returns the identities s's task was seen with, in the order
// first seen (at most RTS_SCHED_SEEN: a task that changed more often
// shows its first ones; SchedChanges counts them all).
func SchedSeen(s *TaskStats) []Identity {
	var ids []Identity
	for _, k := range s.SchedSeen {
		if k == 0 {
			break
		}
		// rts_sched_key: 1<<31 | policy<<8 | normal prio byte (255: -1).
		id := Identity{Policy: k >> 8 & 0xff, Prio: int(k & 0xff)}
		if id.Prio == 255 {
			id.Prio = -1
		}
		ids = append(ids, id)
	}
	return ids
}

// warmUpDetect is RTS_WARM_UP_DETECT: the start-up is detected.
const warmUpDetect = ^uint64(0)

// warmUpNs is the warm_up_ns setting of Config.WarmUp.
func warmUpNs(d time.Duration) uint64 {
	switch {
	case d == 0:
		return warmUpDetect
	case d < 0:
		return 0
	}
	return uint64(d)
}

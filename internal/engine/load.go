package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/ksym"
)

// Load loads the programs with cfg (nothing is attached yet). The
// features are probed once, here: Features records what was found.
func Load(cfg Config) (*Engine, error) {
	e, err := newEngine(cfg)
	if err != nil {
		return nil, err
	}
	if err := e.load(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// newEngine checks the process and chooses the engine's backend.
func newEngine(cfg Config) (*Engine, error) {
	if err := Probe(); err != nil {
		return nil, err
	}
	back, why, err := chooseEngine(cfg.Engine, cfg.BTFFile)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, back: back, carries: histCarries{}}
	e.Features.Engine, e.Features.EngineNote = back.kind(), why
	return e, nil
}

// load probes the features and loads the programs, the maps and the
// notices' reader; on an error, what it loaded is left for Close.
func (e *Engine) load() error {
	if err := e.prepare(); err != nil {
		return err
	}
	entries := uint32(1)
	if e.cfg.Trace {
		var err error
		if entries, err = flightEntries(e.ncpu, e.cfg.FlightPerCPU); err != nil {
			return err
		}
	}
	spec, err := e.back.load(e, e.settings(), entries)
	if err != nil {
		return err
	}
	e.loadReapply(spec)
	e.Features.derive()
	return e.finishLoad(entries)
}

// ProbeFeatures finds what the engine cfg chooses would find of the
// kernel: it loads and attaches it, with no target, and closes it
// (doctor's BPF checks). On an error, the features probed before it.
func ProbeFeatures(cfg Config) (Features, error) {
	e, err := newEngine(cfg)
	if err != nil {
		return Features{}, err
	}
	defer e.Close()
	if err = e.load(); err == nil {
		err = e.Attach()
	}
	return e.Features, err
}

// prepare reads --btf FILE, counts the CPUs, sizes the flight recorder
// and probes the map types the engine needs.
func (e *Engine) prepare() error {
	if e.cfg.BTFFile != "" {
		types, err := LoadBTFFile(e.cfg.BTFFile)
		if err != nil {
			return err
		}
		e.types = types
	} else {
		e.btfCache = btf.NewCache()
	}
	_ = rlimit.RemoveMemlock() // pre-5.11 kernels charge BPF memory to RLIMIT_MEMLOCK
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("counting CPUs: %w", err)
	}
	e.ncpu = ncpu
	if e.cfg.FlightPerCPU == 0 {
		e.cfg.FlightPerCPU = DefaultFlightFor(ncpu)
	}
	if err := CheckFlightPerCPU(e.cfg.FlightPerCPU); err != nil {
		return fmt.Errorf("flight recorder depth: %w", err)
	}
	return e.Features.probeRingBuf()
}

// settings are the load-time constants both engines share (each backend
// adds its own), with the features they depend on probed.
func (e *Engine) settings() map[string]any {
	cfg := e.cfg
	syms, _ := ksym.Kernel()
	wake := syms.Addr("hrtimer_wakeup")
	e.Features.set(FeatureKernelSymbols, nil)
	if wake == 0 {
		e.Features.set(FeatureKernelSymbols, missingFeature(FeatureKernelSymbols))
	}
	e.Features.probePercpuLookup(cfg.TestNoPercpuLookup)
	vars := map[string]any{
		"trace_enabled":     cfg.Trace,
		"violation_notices": cfg.Trace || cfg.ViolationNotices,
		"sleep_stacks":      cfg.SleepStacks && cfg.Trace,
		"waiter_stacks":     e.Features.Has(FeaturePercpuLookup),
		"flight_per_cpu":    cfg.FlightPerCPU,
		"stack_min_wait_ns": cfg.StackMinWait,
		"hrtimer_wakeup_fn": wake,
		"slo_default":       cfg.SLODefault,
		"warm_up_ns":        warmUpNs(cfg.WarmUp),
		"test_storage_busy": cfg.TestStorageBusy,
		"test_stats_nomem":  cfg.TestStatsNoMem,
		"ipi_asked":         cfg.IPI,
	}
	ipiVars(syms, vars)
	sleeps := newSleepTable(syms)
	sleeps.vars(vars)
	e.Features.SleepReasons = sleeps.describe()
	return vars
}

// loadOptions are the collection options of every collection the engine
// loads: the kernel's types from --btf FILE, else from the one cache.
func (e *Engine) loadOptions() ebpf.CollectionOptions {
	if e.types != nil {
		return e.types.Options()
	}
	return ebpf.CollectionOptions{Cache: e.btfCache}
}

// loadReapply loads reapply_slo from spec (either engine's, with its
// settings) on the engine's maps, in a collection of its own: a kernel
// without bpf_for_each_map_elem (5.13) loses that feature only, and Attach
// never sees the program (it is run, not attached). The load is the
// feature's probe.
func (e *Engine) loadReapply(spec *ebpf.CollectionSpec) {
	if e.cfg.TestNoReapply {
		e.Features.set(FeatureForEachMapElem, missingFeature(FeatureForEachMapElem))
		return
	}
	sub := spec.Copy()
	sub.Programs = map[string]*ebpf.ProgramSpec{"reapply_slo": spec.Programs["reapply_slo"]}
	if p := spec.Programs["settle_held"]; p != nil && p.Type == ebpf.RawTracepoint {
		sub.Programs["settle_held"] = p // the classic engine's: bpf_for_each_map_elem too
	}
	opts := e.loadOptions()
	opts.MapReplacements = e.maps
	c, err := ebpf.NewCollectionWithOptions(sub, opts)
	if err != nil {
		var ve *ebpf.VerifierError
		if !errors.As(err, &ve) && !errors.Is(err, ebpf.ErrNotSupported) && !errors.Is(err, unix.EINVAL) {
			err = fmt.Errorf("loading reapply_slo: %w", err)
		}
		e.Features.set(FeatureForEachMapElem, err)
		return
	}
	e.Features.set(FeatureForEachMapElem, nil)
	e.reapply = c
}

// finishLoad maps the flight recorder, sets the SLOs and opens the notices:
// the same for both engines, whose maps are in e.objs.bpfMaps.
func (e *Engine) finishLoad(entries uint32) error {
	cfg := e.cfg
	var err error
	if cfg.Trace {
		size := int(entries) * int(unsafe.Sizeof(Event{}))
		page := os.Getpagesize()
		size = (size + page - 1) / page * page
		e.flight, err = unix.Mmap(e.objs.Flight.FD(), 0, size, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mapping the flight recorder: %w", err)
		}
	}
	for id, b := range cfg.SLOByID {
		if err := e.SetSLO(id, b); err != nil {
			return err
		}
	}
	e.notices, err = ringbuf.NewReader(e.objs.Notices)
	return err
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

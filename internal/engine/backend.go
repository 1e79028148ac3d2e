package engine

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// Engine kinds (Config.Engine, Features.Engine): the only place they are
// named. Callers ask Features what they need (Has, EngineFallback).
const (
	EngineAuto    = ""        // BTF when the kernel has it, else classic
	EngineBTF     = "btf"     // tp_btf, task storage, CO-RE (rtscope.bpf.c)
	EngineClassic = "classic" // classic tracepoints, offsets from tracefs (classic.bpf.c)
)

// backend is what differs between the BTF engine (btfBackend) and the
// classic one (classicBackend): how the programs are loaded (their spec,
// the context each decodes: tp_btf arguments, or tracepoint records at
// the offsets tracefs gives), what they attach to, how existing tasks are
// found, and what user space adds to their records. Everything else (the
// maps, the notices, the flight recorder, the statistics) is shared.
type backend interface {
	kind() string // EngineBTF or EngineClassic
	// load loads the programs with the shared settings vars and a flight
	// recorder of entries events into e.core, e.objs and e.maps, and
	// records the features it probes; it returns the spec with its
	// settings, for loadReapply.
	load(e *Engine, vars map[string]any, entries uint32) (*ebpf.CollectionSpec, error)
	attach(e *Engine) error
	// scan tracks the existing tasks that match a target (ScanWith).
	scan(e *Engine, between func()) error
	// untrack ends the tracking of a removed target's tasks (Untrack).
	untrack(e *Engine, target uint32) error
	// taskStarted and identity complete what the programs could not read
	// of a task: at its start notice, and at each statistics read.
	taskStarted(e *Engine, id uint64, tid uint32)
	identity(e *Engine, s *TaskStats)
}

// btfBackend is the BTF engine: rtscope.bpf.c's tp_btf programs, task
// storage and CO-RE reads, with optional fentry/fexit and tracepoints.
type btfBackend struct{}

func (btfBackend) kind() string { return EngineBTF }

// optionalPrograms are the BTF engine's programs loaded apart from the
// core, each set in a collection of its own (featureTable's programs).
func optionalPrograms() []string {
	var out []string
	for f := range Feature(featureCount) {
		out = append(out, featureTable[f].programs...)
	}
	return out
}

// load loads rtscope.bpf.c: the core programs, then each feature's
// optional set.
func (btfBackend) load(e *Engine, vars map[string]any, entries uint32) (*ebpf.CollectionSpec, error) {
	e.Features.set(FeatureKernelBTF, nil)
	if err := e.Features.probeTaskStorage(); err != nil {
		return nil, err
	}
	vars["hold_samples"] = true
	e.Features.PageFaults = "counted per task at each switch-out from task_struct min_flt/maj_flt, memory locking read from its mm; " +
		"their time is not measured (no page-fault exit tracepoint)"
	spec, err := e.variantSpec(loadBpf, loadBpfinline)
	if err != nil {
		return nil, err
	}
	kspec, err := e.kernelSpec()
	if err != nil {
		return nil, fmt.Errorf("reading kernel BTF: %w", err)
	}
	e.Features.Steal = stealClock(kspec)
	e.Features.set(FeatureStealClock, nil)
	if !e.Features.Steal.Readable {
		e.Features.set(FeatureStealClock, errors.New(e.Features.Steal.Method))
	}
	if err := setVariables(spec, vars); err != nil {
		return nil, err
	}
	spec.Maps["flight"].MaxEntries = entries
	ipiMaps(spec, e.ncpu, e.cfg.IPI)
	legacy, err := legacySchedSwitch(kspec)
	if err != nil {
		return nil, err
	}
	e.Features.set(FeatureSwitchPrevState, nil)
	switchName := "on_sched_switch"
	if legacy {
		e.Features.set(FeatureSwitchPrevState, missingFeature(FeatureSwitchPrevState))
		switchName = "on_sched_switch_legacy"
	}
	if err := e.loadCore(spec, switchName); err != nil {
		return nil, err
	}
	// Each optional set on its own: a missing kernel function costs its
	// feature, not the whole engine.
	for f := range Feature(featureCount) {
		switch progs := featureTable[f].programs; {
		case progs == nil:
		case ipiFeature(f) && !e.cfg.IPI:
			e.Features.set(f, errIPINotAsked)
		default:
			e.Features.set(f, e.loadOptional(spec, progs))
		}
	}
	return spec, nil
}

// loadCore loads the programs of spec that every measurement needs (all
// but the optional ones, the other sched_switch variant and reapply_slo)
// and takes their maps, which the optional programs share.
func (e *Engine) loadCore(spec *ebpf.CollectionSpec, switchName string) error {
	core := spec.Copy()
	for _, n := range append(optionalPrograms(), "on_sched_switch", "on_sched_switch_legacy", "reapply_slo") {
		delete(core.Programs, n)
	}
	core.Programs[switchName] = spec.Programs[switchName]
	coll, err := ebpf.NewCollectionWithOptions(core, e.loadOptions())
	if err != nil {
		return explainLoadError(err)
	}
	// Taken before Assign moves them out of the collection.
	e.maps = map[string]*ebpf.Map{}
	for name, m := range coll.Maps {
		e.maps[name] = m
	}
	if err := coll.Assign(&e.objs); err != nil {
		coll.Close()
		return err
	}
	e.core = coll
	return nil
}

// loadOptional loads the programs names of spec in a collection of their
// own, on the core maps (e.optional).
func (e *Engine) loadOptional(spec *ebpf.CollectionSpec, names []string) error {
	sub := spec.Copy()
	sub.Programs = map[string]*ebpf.ProgramSpec{}
	for _, n := range names {
		sub.Programs[n] = spec.Programs[n]
	}
	opts := e.loadOptions()
	opts.MapReplacements = e.maps
	c, err := ebpf.NewCollectionWithOptions(sub, opts)
	if err != nil {
		return err
	}
	e.optional = append(e.optional, c)
	return nil
}

// attach attaches the core programs, all or none, then each optional set;
// an optional set that loads but cannot attach (arm64 kernels without BPF
// trampolines) costs its feature only.
func (btfBackend) attach(e *Engine) error {
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

// optionalFailed records which feature an unattachable optional collection costs.
func (e *Engine) optionalFailed(c *ebpf.Collection, err error) {
	for name := range c.Programs {
		if f, ok := featureOf(name); ok {
			e.Features.set(f, &attachError{err})
		}
	}
	e.Features.derive()
}

func (btfBackend) scan(e *Engine, between func()) error {
	return runTaskIter(e.objs.TrackExisting, between)
}

func (btfBackend) untrack(e *Engine, target uint32) error {
	if err := e.objs.UntrackTarget.Set(target); err != nil {
		return fmt.Errorf("untracking target %d: %w", target, err)
	}
	return runTaskIter(e.objs.UntrackExisting, nil)
}

// The BTF engine's programs read the task's identity themselves.
func (btfBackend) taskStarted(*Engine, uint64, uint32) {}
func (btfBackend) identity(*Engine, *TaskStats)        {}

// setVariables sets the load-time constants of spec.
func setVariables(spec *ebpf.CollectionSpec, vars map[string]any) error {
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return nil
}

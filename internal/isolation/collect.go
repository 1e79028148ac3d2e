package isolation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/tpformat"
)

// Object is isolation's BPF object and its hash, for rtscope version.
func Object() engine.Object {
	return engine.ObjectHash("isolation.bpf.o (isolation intrusions)", _IsoBytes)
}

// maxCPUs is ISO_MAX_CPUS: the watched-CPU bitmap's size.
const maxCPUs = 1024

// Options are a run's settings.
type Options struct {
	CPUs     []int // watched
	Duration time.Duration
	Allow    []string
	// Ready, when set, is called once the hooks are attached (tests read
	// /proc/interrupts there).
	Ready func()
	// Ending, when set, is called before the hooks are detached
	// (detaching patches kernel text: IPIs to every CPU).
	Ending func()
	// OwnIPIs keeps the IPIs this process sends (tests whose intruder is
	// one of their threads); rtscope's own are left out.
	OwnIPIs bool
	// Engine is watch's --engine: engine.EngineBTF, EngineClassic, or
	// EngineAuto (BTF when the kernel's BTF is usable, else classic).
	Engine string
}

// probe is a BPF object loaded and attached.
type probe struct {
	coll  *ebpf.Collection
	links []link.Link
	// missing: the hooks this kernel lacks (their tracepoint), not attached.
	missing []string
	// engine: engine.EngineBTF or EngineClassic; engineNote: why classic.
	engine, engineNote string
}

func (p *probe) close() {
	p.detach()
	if p.coll != nil {
		p.coll.Close()
	}
}

// detach closes the links all at once: each close waits for its own RCU
// grace periods (a perf event's tracepoint, a trampoline), one after the
// other they took 1.5 s of a 0.1 s classic run under load.
func (p *probe) detach() {
	var wg sync.WaitGroup
	for _, l := range p.links {
		wg.Go(func() { l.Close() })
	}
	wg.Wait()
	p.links = nil
}

// open loads the object of engine want (Options.Engine) for the watched
// cpus and attaches its programs; a program whose tracepoint the kernel
// lacks is left out and named.
func open(want string, cpus []int, syms *ksym.Table) (*probe, error) {
	kind, why, err := chooseEngine(want)
	if err != nil {
		return nil, err
	}
	p := &probe{engine: kind, engineNote: why}
	var spec *ebpf.CollectionSpec
	if kind == engine.EngineClassic {
		spec, err = classicSpec(p, tpformat.ReadFormat)
	} else {
		spec, err = btfSpec(p)
	}
	if err != nil {
		return nil, err
	}
	p.missing = withoutAlternative(p.missing)
	if err := setVars(spec, cpus, syms); err != nil {
		return nil, err
	}
	possible, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	// Nothing here writes the engine's flight recorder, stacks or notices.
	spec.Maps["ipi_slots"].MaxEntries = uint32(possible * 3)
	spec.Maps["stacks"].MaxEntries = 1
	spec.Maps["notices"].MaxEntries = 4096
	capPerCPU(spec, possible)
	if p.coll, err = ebpf.NewCollection(spec); err != nil {
		return nil, fmt.Errorf("loading the isolation programs (%s engine): %w", kind, err)
	}
	if err := p.attach(spec); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// ipiReceipts are the two families of IPI receipt tracepoints: x86's
// irq_vectors and arm64's (and arm's) ipi:ipi_entry/ipi_exit. A kernel has
// one; the other's absence is not a gap.
var ipiReceipts = [][]string{
	{"call_function_entry", "call_function_exit", "call_function_single_entry", "call_function_single_exit",
		"reschedule_entry", "reschedule_exit", "irq_work_entry", "irq_work_exit"},
	{"ipi_entry", "ipi_exit"},
}

// withoutAlternative drops from the missing tracepoints the IPI receipt
// family the kernel does not need (the other one is there).
func withoutAlternative(missing []string) []string {
	gone := map[string]bool{}
	for _, tp := range missing {
		gone[tp] = true
	}
	have := func(family []string) bool {
		for _, tp := range family {
			if gone[tp] {
				return false
			}
		}
		return true
	}
	drop := map[string]bool{}
	for i, family := range ipiReceipts {
		if have(ipiReceipts[1-i]) {
			for _, tp := range family {
				drop[tp] = true
			}
		}
	}
	var out []string
	for _, tp := range missing {
		if !drop[tp] {
			out = append(out, tp)
		}
	}
	return out
}

// perCPUBudget bounds the memory of each preallocated per-CPU hash: a
// value a possible CPU an entry, iso_tasks' 4096 entries of 56 bytes took
// 458 KiB on 2 CPUs, and would take 59 MiB on 256.
const perCPUBudget = 16 << 20

// capPerCPU shrinks the per-CPU hashes to perCPUBudget on a large machine
// (a full map's refusals are counted: Snapshot.Lost).
func capPerCPU(spec *ebpf.CollectionSpec, possible int) {
	for _, m := range spec.Maps {
		if m.Type != ebpf.PerCPUHash {
			continue
		}
		if limit := uint32(perCPUBudget / (possible * int(m.ValueSize))); m.MaxEntries > limit {
			m.MaxEntries = max(limit, 64)
		}
	}
}

// setVars sets the object's load-time constants: the watched CPUs, the
// IPI kind functions (ipi.bpf.h), and no flight recorder.
func setVars(spec *ebpf.CollectionSpec, cpus []int, syms *ksym.Table) error {
	var mask [maxCPUs / 64]uint64
	for _, c := range cpus {
		if c >= maxCPUs {
			return fmt.Errorf("CPU %d: rtscope isolation watches CPUs below %d", c, maxCPUs)
		}
		mask[c/64] |= 1 << (c % 64)
	}
	vars := map[string]any{
		"iso_cpus":       mask,
		"trace_enabled":  false,
		"ipi_fn_tlb":     syms.Addr("flush_tlb_func"),
		"ipi_fn_ttwu":    syms.Addr("sched_ttwu_pending"),
		"ipi_fn_generic": syms.Addr("generic_smp_call_function_single_interrupt"),
		// The tick's own hrtimer (tick_sched_timer before 6.13).
		"iso_fn_tick":     syms.Addr("tick_nohz_handler"),
		"iso_fn_tick_old": syms.Addr("tick_sched_timer"),
	}
	for k, v := range vars {
		if err := spec.Variables[k].Set(v); err != nil {
			return fmt.Errorf("setting %s: %w", k, err)
		}
	}
	return nil
}

// Session is a collection attached and counting: Start begins it,
// Snapshot reads what it counted since (as often as wanted, while it
// runs: serve's /metrics, doctor --watch), Close ends it.
type Session struct {
	p           *probe
	syms        *ksym.Table
	o           Options
	start       time.Time
	stealBefore map[int]uint64
	tickBefore  tickState // the nohz_full CPUs' tick at the start (tick.go)
}

// Start loads and attaches the isolation programs for o.CPUs (o.Duration,
// Ready and Ending are Collect's: unused here).
func Start(o Options) (*Session, error) {
	syms, err := ksym.Kernel()
	if err != nil {
		return nil, fmt.Errorf("reading kallsyms: %w", err)
	}
	p, err := open(o.Engine, o.CPUs, syms)
	if err != nil {
		return nil, err
	}
	steal, err := readSteal()
	if err != nil {
		p.close()
		return nil, err
	}
	return &Session{p: p, syms: syms, o: o, start: time.Now(), stealBefore: steal, tickBefore: readTickState()}, nil
}

// Snapshot reads the counts since Start, names resolved. The BPF maps
// only grow, so a later Snapshot counts at least as much in each row.
func (ss *Session) Snapshot() (*Snapshot, error) {
	o := ss.o
	s := &Snapshot{DurationNs: uint64(time.Since(ss.start)), CPUs: o.CPUs, Allow: o.Allow, Missing: ss.p.missing}
	if !o.OwnIPIs {
		s.self = uint32(os.Getpid())
	}
	stealAfter, err := readSteal()
	if err != nil {
		return nil, err
	}
	s.Steal = stealDiff(o.CPUs, ss.stealBefore, stealAfter)
	tickAfter := readTickState()
	describeSystem(s)
	if err := readMaps(ss.p.coll, s, ss.syms); err != nil {
		return nil, err
	}
	addTickState(s, ss.tickBefore, tickAfter)
	ss.p.describe(s)
	return s, nil
}

// Close detaches the programs and frees the maps.
func (ss *Session) Close() { ss.p.close() }

// Collect watches o.CPUs for o.Duration (or until ctx ends) and returns
// what ran there, names resolved.
func Collect(ctx context.Context, o Options) (*Snapshot, error) {
	ss, err := Start(o)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	if o.Ready != nil {
		o.Ready()
	}
	select {
	case <-ctx.Done():
	case <-time.After(o.Duration):
	}
	if o.Ending != nil {
		o.Ending()
	}
	// The counts are read while attached (the deferred Close detaches):
	// detaching the links one by one counted the receipts of the detach's
	// time too, 5% over /proc/interrupts' window read at Ending (31848
	// IPIs attributed against +30383, remote-work under load).
	return ss.Snapshot()
}

// errNoCPUs is Collect's error without a CPU to watch.
var errNoCPUs = errors.New("no CPU to watch")

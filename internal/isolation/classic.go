package isolation

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/tpformat"
)

// ClassicObject is the classic engine's isolation object and its hash,
// for rtscope version.
func ClassicObject() engine.Object {
	return engine.ObjectHash("isolation_classic.bpf.o (isolation intrusions, classic engine)", _IsoclassicBytes)
}

// ClassicLimits are what isolation's classic engine cannot see: the
// tracepoint records do not carry it (Snapshot.EngineLimits).
var ClassicLimits = []string{
	"a task that exited before the end of the run has no kernel-thread flag nor allowed-CPU count (sched_switch's record lacks them; they are read from /proc for the tasks alive): it is judged as a user task",
	"on x86, irq_work IPIs are not counted: the kernel refuses a classic tracepoint program on irq_vectors/irq_work_exit (arm64's ipi:ipi_entry/ipi_exit count them)",
	"hrtimer armings are not seen, remote or not (hrtimer_start's record has no base CPU; wheel timers' are), and a wheel timer expired for another CPU by timer migration counts as the running CPU's own",
	"its programs do not nest: an IPI or IRQ taken while another of them runs on the CPU (a softirq's or a work item's hook, run with interrupts on) is not seen; the kernel counts them as the programs' recursion misses",
}

// chooseEngine resolves Options.Engine as watch's --engine does: the BTF
// engine when the kernel's BTF is usable, else the classic one; why says
// why the classic one runs.
func chooseEngine(want string) (kind, why string, err error) {
	switch want {
	case engine.EngineBTF:
		return engine.EngineBTF, "", nil
	case engine.EngineClassic:
		return engine.EngineClassic, "forced by --engine classic", nil
	case engine.EngineAuto:
		if err := engine.KernelBTF(); err != nil {
			return engine.EngineClassic, err.Error() + "; the classic engine (classic tracepoints) runs instead", nil
		}
		return engine.EngineBTF, "", nil
	}
	return "", "", fmt.Errorf("--engine %q: must be btf or classic", want)
}

// btfSpec is the BTF engine's object, without the programs whose
// tracepoint this kernel lacks (p.missing).
func btfSpec(p *probe) (*ebpf.CollectionSpec, error) {
	spec, err := loadIso()
	if err != nil {
		return nil, err
	}
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("rtscope isolation --engine btf needs the kernel's BTF (/sys/kernel/btf/vmlinux; --engine classic runs without): %w", err)
	}
	for name, ps := range spec.Programs {
		tp := strings.TrimPrefix(ps.SectionName, "tp_btf/")
		if _, err := kernel.AnyTypeByName("btf_trace_" + tp); err != nil {
			p.missing = append(p.missing, tp)
			delete(spec.Programs, name)
		}
	}
	return spec, nil
}

// classicField binds a load-time offset of isolation_classic.bpf.c to a
// tracepoint field of size bytes (a char[16] comm: 16).
type classicField struct {
	variable, system, event, field string
	size                           uint32
}

var classicFields = []classicField{
	{"off_irq_entry_irq", "irq", "irq_handler_entry", "irq", 4},
	{"off_irq_exit_irq", "irq", "irq_handler_exit", "irq", 4},
	{"off_softirq_entry_vec", "irq", "softirq_entry", "vec", 4},
	{"off_softirq_exit_vec", "irq", "softirq_exit", "vec", 4},
	{"off_softirq_raise_vec", "irq", "softirq_raise", "vec", 4},
	{"off_queue_work_function", "workqueue", "workqueue_queue_work", "function", 8},
	{"off_queue_work_cpu", "workqueue", "workqueue_queue_work", "cpu", 4},
	{"off_work_start_function", "workqueue", "workqueue_execute_start", "function", 8},
	{"off_work_end_function", "workqueue", "workqueue_execute_end", "function", 8},
	{"off_switch_prev_comm", "sched", "sched_switch", "prev_comm", 16},
	{"off_switch_prev_pid", "sched", "sched_switch", "prev_pid", 4},
	{"off_tick_stop_success", "timer", "tick_stop", "success", 4},
	{"off_tick_stop_dependency", "timer", "tick_stop", "dependency", 4},
	{"off_csd_queue_cpu", "csd", "csd_queue_cpu", "cpu", 4},
	{"off_csd_queue_callsite", "csd", "csd_queue_cpu", "callsite", 8},
	{"off_csd_queue_func", "csd", "csd_queue_cpu", "func", 8},
	{"off_ipi_send_cpu", "ipi", "ipi_send_cpu", "cpu", 4},
	{"off_ipi_send_callsite", "ipi", "ipi_send_cpu", "callsite", 8},
	{"off_ipi_send_callback", "ipi", "ipi_send_cpu", "callback", 8},
	{"off_timer_start_timer", "timer", "timer_start", "timer", 8},
	{"off_timer_start_function", "timer", "timer_start", "function", 8},
	{"off_timer_start_flags", "timer", "timer_start", "flags", 4},
	{"off_timer_entry_timer", "timer", "timer_expire_entry", "timer", 8},
	{"off_timer_entry_function", "timer", "timer_expire_entry", "function", 8},
	{"off_timer_exit_timer", "timer", "timer_expire_exit", "timer", 8},
	{"off_hrtimer_entry_hrtimer", "timer", "hrtimer_expire_entry", "hrtimer", 8},
	{"off_hrtimer_entry_function", "timer", "hrtimer_expire_entry", "function", 8},
	{"off_hrtimer_exit_hrtimer", "timer", "hrtimer_expire_exit", "hrtimer", 8},
	{"off_ipi_entry_reason", "ipi", "ipi_entry", "reason", 8}, // arm64, arm: no irq_vectors
	{"off_ipi_exit_reason", "ipi", "ipi_exit", "reason", 8},
}

// classicNoField is RTS_NOFIELD: a field the kernel's record lacks.
const classicNoField = 0xffff

// classicOffsets reads each field's offset with read (tpformat.ReadFormat
// outside tests). A tracepoint this kernel lacks, or whose field is not
// as the stubs read it, is in bad ("system/event": why): its program is
// not loaded, and the report names it.
func classicOffsets(read func(system, event string) (*tpformat.Format, error)) (offs map[string]uint32, bad map[string]string) {
	offs, bad = map[string]uint32{}, map[string]string{}
	formats := map[string]*tpformat.Format{}
	for _, b := range classicFields {
		tp := b.system + "/" + b.event
		offs[b.variable] = classicNoField
		f, ok := formats[tp]
		if !ok {
			var err error
			if f, err = read(b.system, b.event); err != nil {
				bad[tp] = b.event
				f = &tpformat.Format{}
			}
			formats[tp] = f
		}
		if _, gone := bad[tp]; gone {
			continue
		}
		fd, ok := f.Fields[b.field]
		if !ok || fd.DataLoc || fd.Size != b.size || fd.Offset >= classicNoField {
			bad[tp] = fmt.Sprintf("%s (field %s is not %d bytes)", b.event, b.field, b.size)
			continue
		}
		offs[b.variable] = fd.Offset
	}
	return offs, bad
}

// classicSpec is the classic engine's object, its offsets set, without
// the programs whose tracepoint this kernel lacks or lays out otherwise
// (p.missing).
func classicSpec(p *probe, read func(system, event string) (*tpformat.Format, error)) (*ebpf.CollectionSpec, error) {
	spec, err := loadIsoclassic()
	if err != nil {
		return nil, err
	}
	offs, bad := classicOffsets(read)
	for name, ps := range spec.Programs {
		system, event, ok := classicTracepoint(ps.SectionName)
		if !ok {
			return nil, fmt.Errorf("program %s: section %q is no classic tracepoint", name, ps.SectionName)
		}
		why, known := bad[system+"/"+event]
		if !known {
			if _, err := read(system, event); err != nil {
				why, known = event, true
			}
		}
		if known {
			p.missing = append(p.missing, why)
			delete(spec.Programs, name)
		}
	}
	for name, v := range offs {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return spec, nil
}

// classicTracepoint splits "tracepoint/SYSTEM/EVENT".
func classicTracepoint(section string) (system, event string, ok bool) {
	rest, ok := strings.CutPrefix(section, "tracepoint/")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "/")
}

// attach attaches every program of p.coll to its hook: a tp_btf one as
// tracing, a classic one to its tracepoint. The exits go first: an entry
// hooked before its exit, in the gap between two attaches, left its
// state set until an exit of another handler came, whose time ran from
// it (8 reschedule IPIs counted 21 ms, remote-work under load, classic).
func (p *probe) attach(spec *ebpf.CollectionSpec) error {
	for _, name := range exitsFirst(spec) {
		ps := spec.Programs[name]
		var l link.Link
		var err error
		if system, event, ok := classicTracepoint(ps.SectionName); ok {
			l, err = link.Tracepoint(system, event, p.coll.Programs[name], nil)
		} else {
			l, err = link.AttachTracing(link.TracingOptions{Program: p.coll.Programs[name]})
		}
		if err != nil {
			return fmt.Errorf("attaching %s: %w", name, err)
		}
		p.links = append(p.links, l)
	}
	return nil
}

// exitsFirst is spec's programs by name, those that end a handler
// (*_exit, *_end) first.
func exitsFirst(spec *ebpf.CollectionSpec) []string {
	names := slices.Sorted(maps.Keys(spec.Programs))
	isExit := func(n string) bool { return strings.HasSuffix(n, "_exit") || strings.HasSuffix(n, "_end") }
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case isExit(a) && !isExit(b):
			return -1
		case isExit(b) && !isExit(a):
			return 1
		}
		return 0
	})
	return names
}

// pfKthread is PF_KTHREAD, in /proc/TID/stat's flags.
const pfKthread = 0x00200000

// classicTaskInfo fills in what sched_switch's record lacks of a task
// that ran on a watched CPU (the classic stub passes 0), from /proc while
// the task lives: its tgid, whether it is a kernel thread, and whether it
// may run on one CPU only. An exited task keeps what the record told.
func classicTaskInfo(r *TaskRow) {
	dir := "/proc/" + strconv.FormatUint(uint64(r.TID), 10)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return
	}
	for line := range strings.Lines(string(status)) {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Tgid":
			if tgid, err := strconv.ParseUint(v, 10, 32); err == nil && r.PID == 0 {
				r.PID = uint32(tgid)
			}
		case "Cpus_allowed_list":
			if cpus, err := cpuset.ParseList(v); err == nil {
				r.PerCPU = len(cpus) == 1
			}
		}
	}
	if flags, err := statFlags(dir + "/stat"); err == nil {
		r.Kthread = flags&pfKthread != 0
	}
}

// statFlags reads the flags (the 9th field) of a /proc stat file; the
// comm may hold spaces and parentheses, so fields count from the last ')'.
func statFlags(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, errors.New("no comm in the stat line")
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 7 {
		return 0, errors.New("short stat line")
	}
	return strconv.ParseUint(f[6], 10, 64)
}

// describe records in s the engine that counted it, and for the classic
// one its note and limits, and what sched_switch's record lacks of each
// task (classicTaskInfo).
func (p *probe) describe(s *Snapshot) {
	s.Engine = p.engine
	if p.engine != engine.EngineClassic {
		return
	}
	s.EngineNote, s.EngineLimits = p.engineNote, ClassicLimits
	for i := range s.Tasks {
		classicTaskInfo(&s.Tasks[i])
	}
}

package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/tpformat"
)

// ClassicLimits are what the classic engine cannot measure, for the JSON
// features (Features.EngineLimits) and docs/features.md (generated): the
// tracepoint records do not carry it.
var ClassicLimits = []string{
	"policy and affinity come from the live task when stats are read (sched_getattr, sched_getaffinity), not from the kernel at each switch; an exited task keeps the policy its prio implies (FIFO for RT prios: RR looks the same)",
	"hypervisor steal is not in the flight recorder (it is read from the run queue, a kernel structure)",
	"return to user (timer-user) only through the rseq_update tracepoint: threads with a registered rseq area (glibc >= 2.35)",
	"threaded IRQ handler time is the on-CPU time of each irq/N activation (no fentry)",
	"the expiry of CLOCK_REALTIME/TAI sleeper timers is taken from the interrupt's clock reading: their timer IRQ latency is understated by a few us",
	"a CLOCK_REALTIME/TAI deadline is not compared with the time it is armed: such a loop's overruns count only the deadlines it skips",
	"the waker's prio is the one it had when switched in; its policy is implied by that prio",
	"timer expiries of other timers than task sleeps are not in the flight recorder",
	"page faults and memory locking are not measured: they are task_struct and mm fields (the x86-only page-fault tracepoint fires before a fault is known minor or major)",
	"SCHED_DEADLINE jobs (dl-release, dl-exec, dl-response, misses, overruns) are not measured: they are read from the task's sched_dl_entity, a kernel structure, at each switch; a DEADLINE task gets the generic metrics only",
	"its programs do not nest: an event during another of its programs on the same CPU (an interrupt in sched_switch's) is not seen; the kernel counts them as the programs' recursion misses",
}

// KernelBTF says why the running kernel's BTF cannot be used (nil: it can).
// An empty or unreadable /sys/kernel/btf/vmlinux counts as missing.
func KernelBTF() error {
	f, err := os.Open(kernelBTFPath)
	if err != nil {
		return fmt.Errorf("no usable kernel BTF: %w", err)
	}
	defer f.Close() //nolint:errcheck // read-only
	var b [4]byte
	if n, err := f.Read(b[:]); n < 4 || err != nil {
		return errors.New("no usable kernel BTF: /sys/kernel/btf/vmlinux is empty")
	}
	return nil
}

// chooseEngine resolves Config.Engine: the backend to load, and why when
// it is the classic one or when the kernel's types come from --btf FILE.
func chooseEngine(want, btfFile string) (back backend, why string, err error) {
	if btfFile != "" {
		if want == EngineClassic {
			return nil, "", errors.New("--btf is for the BTF engine: --engine classic reads no kernel types")
		}
		return btfBackend{}, "kernel types from --btf " + btfFile, nil
	}
	switch want {
	case EngineBTF:
		return btfBackend{}, "", nil
	case EngineClassic:
		return classicBackend{}, "forced by --engine classic", nil
	case EngineAuto:
		if err := KernelBTF(); err != nil {
			why := err.Error() + "; the classic engine (classic tracepoints) runs instead"
			if KernelHasBTF() {
				why += " (the kernel has BTF of its own: --btf FILE with a copy of this kernel's vmlinux BTF runs the full engine)"
			}
			return classicBackend{fallback: true}, why, nil
		}
		return btfBackend{}, "", nil
	}
	return nil, "", fmt.Errorf("--engine %q: must be btf or classic", want)
}

// classicField binds a load-time constant of classic.bpf.c to a tracepoint field.
type classicField struct {
	variable, system, event, field string
	required                       bool
}

var classicFields = []classicField{
	{"off_switch_prev_pid", "sched", "sched_switch", "prev_pid", true},
	{"off_switch_prev_prio", "sched", "sched_switch", "prev_prio", true},
	{"off_switch_prev_state", "sched", "sched_switch", "prev_state", true},
	{"off_switch_next_comm", "sched", "sched_switch", "next_comm", true},
	{"off_switch_next_pid", "sched", "sched_switch", "next_pid", true},
	{"off_switch_next_prio", "sched", "sched_switch", "next_prio", true},
	{"off_waking_pid", "sched", "sched_waking", "pid", true},
	{"off_waking_prio", "sched", "sched_waking", "prio", true},
	{"off_waking_target_cpu", "sched", "sched_waking", "target_cpu", true},
	{"off_newtask_pid", "task", "task_newtask", "pid", true},
	{"off_newtask_comm", "task", "task_newtask", "comm", true},
	{"off_newtask_clone_flags", "task", "task_newtask", "clone_flags", true},
	{"off_exec_pid", "sched", "sched_process_exec", "pid", true},
	{"off_exit_pid", "sched", "sched_process_exit", "pid", true},
	{"off_exit_prio", "sched", "sched_process_exit", "prio", false},
	{"off_migrate_pid", "sched", "sched_migrate_task", "pid", true},
	{"off_migrate_orig_cpu", "sched", "sched_migrate_task", "orig_cpu", true},
	{"off_migrate_dest_cpu", "sched", "sched_migrate_task", "dest_cpu", true},
	{"off_rename_pid", "task", "task_rename", "pid", true},
	{"off_rename_newcomm", "task", "task_rename", "newcomm", true},
	{"off_hrstart_hrtimer", "timer", "hrtimer_start", "hrtimer", true},
	{"off_hrstart_function", "timer", "hrtimer_start", "function", true},
	{"off_hrstart_softexpires", "timer", "hrtimer_start", "softexpires", true},
	{"off_hrstart_expires", "timer", "hrtimer_start", "expires", false},
	{"off_hrstart_mode", "timer", "hrtimer_start", "mode", false},
	{"off_hrentry_hrtimer", "timer", "hrtimer_expire_entry", "hrtimer", true},
	{"off_hrentry_now", "timer", "hrtimer_expire_entry", "now", true},
	{"off_hrentry_function", "timer", "hrtimer_expire_entry", "function", true},
	{"off_hrexit_hrtimer", "timer", "hrtimer_expire_exit", "hrtimer", false},
	{"off_irq_entry_irq", "irq", "irq_handler_entry", "irq", true},
	{"off_irq_exit_irq", "irq", "irq_handler_exit", "irq", true},
	{"off_irq_exit_ret", "irq", "irq_handler_exit", "ret", false},
	{"off_softirq_vec", "irq", "softirq_entry", "vec", true},
	// IPIs (--ipi): optional tracepoints (6.3+); without them the feature is missing.
	{"off_csd_queue_cpu", "csd", "csd_queue_cpu", "cpu", false},
	{"off_csd_queue_callsite", "csd", "csd_queue_cpu", "callsite", false},
	{"off_csd_queue_func", "csd", "csd_queue_cpu", "func", false},
	{"off_ipi_send_cpu", "ipi", "ipi_send_cpu", "cpu", false},
	{"off_ipi_send_callsite", "ipi", "ipi_send_cpu", "callsite", false},
	{"off_ipi_send_callback", "ipi", "ipi_send_cpu", "callback", false},
	{"off_ipi_entry_reason", "ipi", "ipi_entry", "reason", false}, // arm64, arm
	{"off_ipi_exit_reason", "ipi", "ipi_exit", "reason", false},
	{"off_nmi_handler", "nmi", "nmi_handler", "handler", false}, // x86
	{"off_nmi_delta", "nmi", "nmi_handler", "delta_ns", false},
	{"off_nmi_handled", "nmi", "nmi_handler", "handled", false},
}

// classicNoField is RTS_NOFIELD: a field the kernel's record lacks.
const classicNoField = 0xffff

// classicOffsets reads each field's offset with read (tpformat.ReadFormat
// outside tests), and checks that it has the size and kind the BPF side
// reads: ints of 4 bytes (or a long for prev_state), pointers and times of
// 8, comms as char[16] arrays.
func classicOffsets(read func(system, event string) (*tpformat.Format, error)) (map[string]uint32, error) {
	formats := map[string]*tpformat.Format{}
	out := map[string]uint32{}
	for _, b := range classicFields {
		key := b.system + "/" + b.event
		f, ok := formats[key]
		if !ok {
			var err error
			if f, err = read(b.system, b.event); err != nil && !b.required {
				f = &tpformat.Format{} // an optional tracepoint this kernel lacks: its fields are absent
			} else if err != nil {
				return nil, fmt.Errorf("the classic engine needs tracepoint %s: %w", key, err)
			}
			formats[key] = f
		}
		fd, ok := f.Fields[b.field]
		if !ok {
			if b.required {
				return nil, fmt.Errorf("tracepoint %s has no field %s, which the classic engine needs", key, b.field)
			}
			out[b.variable] = classicNoField
			continue
		}
		var sizeOK bool
		switch {
		case strings.HasSuffix(b.field, "comm"):
			sizeOK = !fd.DataLoc && fd.Size == 16
		case b.field == "prev_state":
			sizeOK = fd.Size == 4 || fd.Size == 8
		case b.field == "hrtimer" || b.field == "function" || b.field == "softexpires" || b.field == "expires" || b.field == "now" || b.field == "clone_flags" ||
			b.field == "callsite" || b.field == "func" || b.field == "callback" || b.field == "reason" || b.field == "delta_ns" || b.field == "handler":
			sizeOK = fd.Size == 8
		default:
			sizeOK = fd.Size == 4
		}
		if !sizeOK || fd.Offset >= classicNoField {
			return nil, fmt.Errorf("tracepoint %s field %s is %s of %d bytes at %d, which the classic engine cannot read", key, b.field, fd.Type, fd.Size, fd.Offset)
		}
		out[b.variable] = fd.Offset
	}
	return out, nil
}

// classicAttach lists the classic engine's programs and their tracepoints;
// one that a feature of featureTable names (featureOf) costs that feature
// when missing, any other the engine.
var classicAttach = []struct {
	prog, system, event string
}{
	{"on_sched_switch", "sched", "sched_switch"},
	{"on_sched_waking", "sched", "sched_waking"},
	{"on_sched_migrate", "sched", "sched_migrate_task"},
	{"on_task_newtask", "task", "task_newtask"},
	{"on_sched_exec", "sched", "sched_process_exec"},
	{"on_task_rename", "task", "task_rename"},
	{"on_sched_exit", "sched", "sched_process_exit"},
	{"on_hrtimer_start", "timer", "hrtimer_start"},
	{"on_hrtimer_expire_entry", "timer", "hrtimer_expire_entry"},
	{"on_hrtimer_expire_exit", "timer", "hrtimer_expire_exit"},
	{"on_irq_entry", "irq", "irq_handler_entry"},
	{"on_irq_exit", "irq", "irq_handler_exit"},
	{"on_softirq_entry", "irq", "softirq_entry"},
	{"on_softirq_exit", "irq", "softirq_exit"},
	{"on_rseq_update", "rseq", "rseq_update"},
	{"on_csd_queue_cpu", "csd", "csd_queue_cpu"},
	{"on_ipi_send_cpu", "ipi", "ipi_send_cpu"},
	{"on_ipi_call_function_entry", "irq_vectors", "call_function_entry"},
	{"on_ipi_call_function_exit", "irq_vectors", "call_function_exit"},
	{"on_ipi_call_function_single_entry", "irq_vectors", "call_function_single_entry"},
	{"on_ipi_call_function_single_exit", "irq_vectors", "call_function_single_exit"},
	{"on_ipi_reschedule_entry", "irq_vectors", "reschedule_entry"},
	{"on_ipi_reschedule_exit", "irq_vectors", "reschedule_exit"},
	{"on_local_timer_entry", "irq_vectors", "local_timer_entry"},
	{"on_local_timer_exit", "irq_vectors", "local_timer_exit"},
	{"on_ipi_entry", "ipi", "ipi_entry"}, // arm64, arm: no irq_vectors
	{"on_ipi_exit", "ipi", "ipi_exit"},
	{"on_nmi_handler", "nmi", "nmi_handler"}, // x86
	// Not irq_work: the kernel refuses a sampling perf event on
	// irq_work_exit (TRACE_EVENT_PERF_PERM: a sample raises an irq_work),
	// and a classic tracepoint program is attached through one. Its IPIs
	// are self-IPIs (the CPU's own work), not sent by another CPU.
}

// classicBackend is the classic engine: classic.bpf.c's classic
// tracepoint programs, which read each value from the tracepoint's record
// at the offsets tracefs prints, for kernels without BTF.
type classicBackend struct {
	fallback bool // chosen because the kernel's BTF is not usable (Features.EngineFallback)
}

func (classicBackend) kind() string { return EngineClassic }

// load loads classic.bpf.c with the shared settings vars and this
// kernel's field offsets; its maps fill e.objs.bpfMaps, so that every
// reader of the engine works unchanged. The features only BTF gives are
// recorded missing, with the classic engine's sentence.
func (c classicBackend) load(e *Engine, vars map[string]any, entries uint32) (*ebpf.CollectionSpec, error) {
	e.Features.set(FeatureKernelBTF, errors.New(e.Features.EngineNote))
	e.Features.EngineFallback = c.fallback
	for _, f := range []Feature{FeatureTaskStorage, FeatureSwitchPrevState, FeatureFexit, FeatureFentry, FeatureCgroupAttach, FeatureStealClock} {
		e.Features.set(f, errClassic)
	}
	vars["hold_samples"] = haveForEachMapElem(e.cfg.TestNoReapply)
	e.Features.PageFaults = "not measured: the classic engine reads no kernel structure (task_struct's fault counters, the mm's locking)"
	spec, err := e.variantSpec(loadClassic, loadClassicinline)
	if err != nil {
		return nil, err
	}
	offs, err := classicOffsets(tpformat.ReadFormat)
	if err != nil {
		return nil, err
	}
	for name, v := range offs {
		vars[name] = v
	}
	if err := setVariables(spec, vars); err != nil {
		return nil, err
	}
	spec.Maps["flight"].MaxEntries = entries
	ipiMaps(spec, e.ncpu, e.cfg.IPI)
	core := spec.Copy()
	delete(core.Programs, "reapply_slo") // loadReapply, on its own
	delete(core.Programs, "settle_held") // the same
	coll, err := ebpf.NewCollectionWithOptions(core, ebpf.CollectionOptions{})
	if err != nil {
		return nil, explainLoadError(err)
	}
	e.maps = map[string]*ebpf.Map{}
	for name, m := range coll.Maps {
		e.maps[name] = m
	}
	if err := coll.Assign(&e.objs.bpfMaps); err != nil {
		coll.Close()
		return nil, err
	}
	e.core = coll
	return spec, nil
}

// attach attaches the classic programs to their tracepoints; the rseq
// tracepoint's failure costs its feature only.
func (classicBackend) attach(e *Engine) error {
	progs := e.core.Programs
	e.Features.set(FeatureRseq, nil)
	e.Features.set(FeatureIPISend, nil)
	e.Features.set(FeatureIPIReceive, nil)
	e.Features.set(FeatureIPIEntry, nil)
	e.Features.set(FeatureLocalTimer, nil)
	e.Features.set(FeatureNMI, nil)
	for _, p := range classicAttach {
		f, optional := featureOf(p.prog)
		if optional && ipiFeature(f) && !e.cfg.IPI {
			e.Features.set(f, errIPINotAsked)
			continue
		}
		l, err := link.Tracepoint(p.system, p.event, progs[p.prog], nil)
		if err != nil {
			if optional {
				e.Features.set(f, fmt.Errorf("tracepoint %s/%s: %w", p.system, p.event, err))
				continue
			}
			e.closeLinks() // a failed attach: nothing to settle
			return fmt.Errorf("attaching %s to tracepoint %s/%s: %w", p.prog, p.system, p.event, err)
		}
		e.links = append(e.links, l)
	}
	e.Features.derive()
	return nil
}

// untrack does nothing: the classic engine cannot walk the tasks, so a
// removed target's tasks stay tracked until they exit.
func (classicBackend) untrack(*Engine, uint32) error { return nil }

func (classicBackend) taskStarted(e *Engine, id uint64, tid uint32) { e.classicLearn(id, tid) }
func (classicBackend) identity(e *Engine, s *TaskStats)             { e.classicIdentity(s) }

// scan starts tracking the existing tasks that match a target, found in
// /proc (no task iterator without BTF): each is registered by running
// classic_scan with its /proc state, at once, so that a caller sees it
// tracked on return as with the BTF engine.
func (classicBackend) scan(e *Engine, between func()) error {
	scan := e.core.Programs["classic_scan"]
	tasks, err := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	if err != nil {
		return err
	}
	scanned := 0 // tasks wanted (ScanBatch)
	for _, p := range tasks {
		tgid64, err1 := strconv.ParseUint(filepath.Base(filepath.Dir(filepath.Dir(p))), 10, 32)
		tid64, err2 := strconv.ParseUint(filepath.Base(p), 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		tid, tgid := uint32(tid64), uint32(tgid64)
		st, err := readProcStat(filepath.Join(p, "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		var w bpfRtsTarget
		var key [16]byte
		copy(key[:15], st.comm)
		if e.objs.WantTid.Lookup(tid, &w) != nil && e.objs.WantTgid.Lookup(tgid, &w) != nil &&
			e.objs.WantComm.Lookup(key, &w) != nil {
			continue
		}
		sleeping := uint64(0)
		if st.state != 'R' {
			sleeping = 1
		}
		args := []uint64{uint64(tid), uint64(tgid), uint64(w.Index), uint64(w.Flags), sleeping, uint64(int64(st.prio)),
			binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])}
		ret, err := scan.Run(&ebpf.RunOptions{Context: args})
		if err != nil {
			return fmt.Errorf("tracking task %d: %w", tid, err)
		}
		_ = ret // not tracked: counted in lost.tasks_not_tracked, or the task exited meanwhile
		if scanned++; scanned%ScanBatch == 0 && between != nil {
			between()
		}
	}
	return nil
}

// procStat is what classicBackend.scan needs of /proc/PID/task/TID/stat.
type procStat struct {
	comm  string
	state byte
	prio  int // kernel prio: the stat file's priority + 100 (MAX_RT_PRIO)
}

// readProcStat parses a stat file: "tid (comm) state ... priority(18th) ...";
// the comm may hold spaces and parentheses, so fields count from the last ')'.
func readProcStat(path string) (procStat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(b))
}

func parseProcStat(s string) (procStat, error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("no comm in the stat line")
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 16 || len(f[0]) != 1 {
		return procStat{}, errors.New("short stat line")
	}
	prio, err := strconv.Atoi(f[15]) // field 18 overall
	if err != nil {
		return procStat{}, fmt.Errorf("bad priority %q", f[15])
	}
	return procStat{comm: s[open+1 : end], state: f[0][0], prio: prio + 100}, nil
}

// classicIdent is what the classic engine's user space learnt of a live
// task: its tgid once, its policy and affinity at each read.
type classicIdent struct {
	tgid         uint32 // 0: unknown (the task was gone when looked up)
	tgidRead     bool   // looked up, found or not: once per task
	sched        bool   // policy, mask and nrCPUs were read
	policy       uint32
	mask, nrCPUs uint64
}

// classicIdentity fills in what the classic engine's records lack from the
// live task: its tgid (see classicTgid), policy and affinity. An exited
// task keeps what was read while it lived (else BPF's guess: its tid as
// pid when a sibling renamed it, the policy its prio implies). Safe for
// concurrent use.
func (e *Engine) classicIdentity(s *TaskStats) {
	e.identMu.Lock()
	defer e.identMu.Unlock()
	if e.ident == nil {
		e.ident = map[uint64]classicIdent{}
	}
	id := e.ident[s.Id]
	if s.Exited == 0 {
		e.classicTgid(&id, s.Id, s.Tid)
		var set unix.CPUSet
		if attr, err := unix.SchedGetAttr(int(s.Tid), 0); err == nil && unix.SchedGetaffinity(int(s.Tid), &set) == nil {
			var mask uint64
			for c := 0; c < 64; c++ {
				if set.IsSet(c) {
					mask |= 1 << c
				}
			}
			id.sched, id.policy, id.mask, id.nrCPUs = true, attr.Policy, mask, uint64(set.Count())
		}
		e.ident[s.Id] = id
	}
	if id.tgid != 0 {
		s.Pid = id.tgid
	}
	if id.sched {
		s.Policy, s.CpusMask, s.NrCpusAllowed = id.policy, id.mask, uint32(id.nrCPUs)
	}
}

// classicLearn is called for each task the classic engine starts tracking
// (its start notice): its tgid is looked up while the task most likely
// still lives, before any statistics are read. Safe for concurrent use.
func (e *Engine) classicLearn(trackID uint64, tid uint32) {
	e.identMu.Lock()
	defer e.identMu.Unlock()
	if e.ident == nil {
		e.ident = map[uint64]classicIdent{}
	}
	id := e.ident[trackID]
	e.classicTgid(&id, trackID, tid)
	e.ident[trackID] = id
}

// classicTgid looks up, once, the tgid of tracked task trackID (tid) in
// /proc/TID/status. The BPF hooks name it from the current task, which is
// the task itself or its creator, except in task_rename when a sibling
// renames it through /proc/PID/task/TID/comm: the record does not say
// whose thread it is, and the hook takes its tid (a kthread renamed by its
// creator looks the same). The status is read first and the task checked
// alive after: its tid cannot have been reused by another task meanwhile
// (sched_process_exit, which marks it exited, runs before the tid is
// freed). The caller holds identMu.
func (e *Engine) classicTgid(id *classicIdent, trackID uint64, tid uint32) {
	if id.tgidRead {
		return
	}
	id.tgidRead = true
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return // exited meanwhile
	}
	tgid, err := parseStatusTgid(string(b))
	if err != nil {
		return
	}
	var s bpfRtsTaskStats
	if e.lookupStats(trackID, &s) != nil || s.Exited != 0 || s.Tid != tid {
		return
	}
	id.tgid = tgid
}

// parseStatusTgid returns the Tgid: line of a /proc status file.
func parseStatusTgid(s string) (uint32, error) {
	for line := range strings.Lines(s) {
		v, ok := strings.CutPrefix(line, "Tgid:")
		if !ok {
			continue
		}
		tgid, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil || tgid == 0 {
			return 0, fmt.Errorf("bad Tgid %q", strings.TrimSpace(v))
		}
		return uint32(tgid), nil
	}
	return 0, errors.New("no Tgid line")
}

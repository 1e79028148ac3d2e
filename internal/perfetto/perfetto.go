// Package perfetto writes rtscope's windows as a Perfetto trace: the native
// protobuf format (a Trace of TracePackets) that the Perfetto UI and
// trace_processor read, not the JSON or text formats.
//
// The kernel events of every window become ftrace event bundles, one per
// CPU: sched_switch, sched_waking (rtscope's wakeup), sched_migrate_task,
// irq_handler_entry/exit and softirq_entry/exit, so that Perfetto draws its
// own CPU tracks (what ran, IRQs, softirqs) and thread tracks (running,
// runnable, preempted, sleeping, who woke whom). A process tree names every
// task seen. rtscope's own findings are track events: in the group "rtscope
// windows", one track per window, named by its title, with a slice over the
// window whose arguments are the verdict, the cause, the value and the
// analysis (its breakdown line by line, and the whole result as JSON); in
// the group "rtscope CPU events", per CPU, the timer callbacks, threaded IRQ
// handlers, sleeps, stack samples and steal that ftrace has no event for.
// An IPI's send (an instant on the sender's CPU track) and its receipt (a
// slice on the receiver's) are joined by a flow, which Perfetto draws as
// an arrow between them (trace.PairIPIs pairs them).
//
// To look at a file: open https://ui.perfetto.dev and choose "Open trace
// file" in the menu on the left (or drop the file on the page). The UI runs
// in the browser and reads the file there, without uploading it; the page,
// once loaded, works offline too. Click a window's slice to read what
// rtscope said of it in the details panel below the tracks. To query a file
// with SQL, run Perfetto's trace_processor_shell on it, e.g. `select ts,
// dur, cpu, utid from sched`.
//
// Times are CLOCK_MONOTONIC nanoseconds, as in rtscope's JSON: an event's
// raw timestamp is its window's start_ns plus its t_ns. They are written in
// the trace's default clock: ftrace bundles offer no monotonic clock
// (FtraceClock), and naming a second clock would make trace_processor drop
// every event it cannot convert for want of a clock snapshot; with one
// clock for all packets, nothing is converted or shifted. Nothing is
// recorded between windows: there, a CPU track shows the last task switched
// in until the next window's first switch.
package perfetto

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// Window is one window to draw, with what rtscope said of it.
type Window struct {
	Title   string // e.g. "worst latency of control/1234: 812.4 us"
	Trace   *trace.Trace
	Verdict string
	Cause   string
	// Detail is the analysis of the window, written as JSON in an argument
	// of its slice (nil: none); its breakdown, if it has one, is also
	// written line by line.
	Detail any
	// PIDs maps thread ids to process ids where rtscope knows them (the
	// tasks it tracked); any other thread is drawn as a process of its own.
	PIDs map[uint32]uint32
	// Kernel is the release of the kernel that recorded the window
	// (report.Report.Kernel); empty: this machine's. Perfetto decodes the
	// state of a switched-out task by kernel version.
	Kernel string
}

// Windows collects every worst-case window and every kept violation example
// window of a watch report, each window once: the same *trace.Trace, or the
// same window decoded twice, is drawn once, with what its first occurrence
// (the worst case, which has the full analysis) says of it.
func Windows(r *report.Report) []Window {
	pids := map[uint32]uint32{}
	for _, t := range r.Tasks {
		if t.PID != 0 {
			pids[t.TID] = t.PID
		}
	}
	type key struct {
		metric            string
		tid               uint32
		start, end, value uint64
		events            int
	}
	seen := map[*trace.Trace]bool{}
	same := map[key]bool{}
	var out []Window
	add := func(w Window) {
		tr := w.Trace
		if tr == nil || seen[tr] {
			return
		}
		k := key{tr.Metric, tr.TID, tr.Start, tr.End, tr.Value, len(tr.Events)}
		if same[k] {
			return
		}
		seen[tr], same[k] = true, true
		w.PIDs, w.Kernel = pids, r.Kernel
		out = append(out, w)
	}
	for _, t := range r.Tasks {
		for _, name := range metricNames(t.Metrics) {
			m := t.Metrics[name]
			if m.Worst != nil {
				add(Window{
					Title: fmt.Sprintf("worst %s of %s/%d: %s us", name, t.Comm, t.TID, units.Us(m.Worst.Value)),
					Trace: m.Worst, Verdict: m.Verdict, Cause: m.Cause, Detail: m.Analysis,
				})
			}
			if m.ViolationCauses == nil {
				continue
			}
			v := m.ViolationCauses
			for _, c := range v.Causes {
				if c.Example == nil || c.Example.Window == nil {
					continue
				}
				add(Window{
					Title: fmt.Sprintf("SLO violation, %s of %s/%d: %s us (%s: %d of %d explained)",
						name, t.Comm, t.TID, units.Us(c.Example.ValueNs), c.Cause, c.Count, v.Analysed),
					Trace: c.Example.Window, Verdict: c.Example.Verdict, Cause: c.Cause,
				})
			}
		}
	}
	return out
}

// metricNames orders the metrics of a task as rtscope lists them, then any
// other names alphabetically: the output must not depend on map order.
func metricNames(ms map[string]*report.Metric) []string {
	var out []string
	for _, n := range metric.Names() {
		if ms[n] != nil {
			out = append(out, n)
		}
	}
	var rest []string
	for n, m := range ms {
		if m != nil && !contains(out, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// WriteFile writes a Perfetto trace of the windows to path ("-": stdout)
// through internal/outfile: complete or not at all.
func WriteFile(path string, ws []Window) error {
	f, err := outfile.Create(path)
	if err != nil {
		return fmt.Errorf("perfetto trace: %w", err)
	}
	return f.Fill(func(w io.Writer) error { return Write(w, ws) })
}

// Write writes a Perfetto trace of the windows to w.
func Write(w io.Writer, ws []Window) error {
	evs, err := collect(ws)
	if err != nil {
		return fmt.Errorf("perfetto trace: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	out := &writer{w: bw}
	first := firstTS(ws, evs)

	out.systemInfo(ws)
	out.processTree(first, ws, evs)
	byCPU := perCPU(evs)
	for _, cpu := range sortedCPUs(byCPU) {
		out.ftrace(cpu, byCPU[cpu])
	}
	if err := out.trackEvents(first, ws, byCPU, ipiFlows(evs)); err != nil {
		return fmt.Errorf("perfetto trace: %w", err)
	}
	if out.err != nil {
		return fmt.Errorf("perfetto trace: %w", out.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("perfetto trace: %w", err)
	}
	return nil
}

// Sequences of packets (trusted_packet_sequence_id): the kernel's data
// (system info, process tree, ftrace) and rtscope's track events, as two
// Perfetto data sources would write them.
const (
	seqKernel = 1
	seqTracks = 2
)

// maxBundle bounds the events of one ftrace bundle: traced writes one per
// kernel buffer page; smaller packets keep any reader's buffers small.
const maxBundle = 4096

// writer streams TracePackets, keeping the first error.
type writer struct {
	w   *bufio.Writer
	err error
	tmp []byte
	// trackSeqStarted: the first packet of the track event sequence is written.
	trackSeqStarted bool
}

func (o *writer) packet(p *msg) {
	if o.err != nil {
		return
	}
	o.tmp = o.tmp[:0]
	o.tmp = appendTagLen(o.tmp, fTracePacket, len(p.b))
	if _, err := o.w.Write(o.tmp); err != nil {
		o.err = err
		return
	}
	_, o.err = o.w.Write(p.b)
}

// event is one event of a window at its absolute time.
type event struct {
	ts    uint64 // CLOCK_MONOTONIC ns
	start uint64 // the window's start: the base of the event's relative times
	e     *trace.Event
}

// collect returns the events of all windows in time order. Windows cut from
// the same flight recorder overlap (a worst case and a violation example,
// say): an event is kept as many times as it appears in the window holding
// it most often, so that overlapping windows draw each event once.
func collect(ws []Window) ([]event, error) {
	most := map[string]int{}
	var out []event
	for _, w := range ws {
		if w.Trace == nil {
			continue
		}
		here := map[string]int{}
		for i := range w.Trace.Events {
			e := &w.Trace.Events[i]
			ts, err := absTime(w.Trace.Start, e.T)
			if err != nil {
				return nil, fmt.Errorf("window %q: %s event at %d ns: %w", w.Title, e.Type, e.T, err)
			}
			k := eventKey(e, ts, w.Trace.Start)
			here[k]++
			if here[k] <= most[k] {
				continue
			}
			most[k]++
			out = append(out, event{ts: ts, start: w.Trace.Start, e: e})
		}
	}
	// Stable: simultaneous events keep the recorder's order.
	sort.SliceStable(out, func(i, j int) bool { return out[i].ts < out[j].ts })
	return out, nil
}

// absTime is start + t, refused when outside the clock's range.
func absTime(start uint64, t int64) (uint64, error) {
	ts := start + uint64(t)
	if (t < 0 && ts > start) || (t > 0 && ts < start) {
		return 0, fmt.Errorf("time outside CLOCK_MONOTONIC (window start %d ns)", start)
	}
	return ts, nil
}

// eventKey identifies an event whatever window it was cut in: its fields
// with the times made absolute.
func eventKey(e *trace.Event, ts, start uint64) string {
	c := *e
	c.T, c.TS = 0, 0
	c.ExpiryT = absRel(e.ExpiryT, start)
	c.SinceT = absRel(e.SinceT, start)
	if e.IPI != nil && e.IPI.SentT != nil { // a receipt's send, cut in two windows
		p := *e.IPI
		p.SentT = absRel(e.IPI.SentT, start)
		c.IPI = &p
	}
	b, _ := json.Marshal(&c) // plain data: cannot fail
	return strconv.FormatUint(ts, 10) + string(b)
}

func absRel(t *int64, start uint64) *int64 {
	if t == nil {
		return nil
	}
	v := int64(start) + *t
	return &v
}

func firstTS(ws []Window, evs []event) uint64 {
	first := uint64(0)
	found := false
	for _, w := range ws {
		if w.Trace != nil && (!found || w.Trace.Start < first) {
			first, found = w.Trace.Start, true
		}
	}
	if len(evs) > 0 && (!found || evs[0].ts < first) {
		first = evs[0].ts
	}
	return first
}

func perCPU(evs []event) map[int][]event {
	out := map[int][]event{}
	for _, e := range evs {
		out[e.e.CPU] = append(out[e.e.CPU], e)
	}
	return out
}

func sortedCPUs(m map[int][]event) []int {
	out := make([]int, 0, len(m))
	for cpu := range m {
		out = append(out, cpu)
	}
	sort.Ints(out)
	return out
}

// systemInfo names the kernel: Perfetto decodes sched_switch's prev_state
// by kernel version (it assumes 4.4 when none is given, whose bits differ
// from the 4.14+ ones written here).
func (o *writer) systemInfo(ws []Window) {
	release, machine := "", ""
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		release, machine = unix.ByteSliceToString(u.Release[:]), unix.ByteSliceToString(u.Machine[:])
	}
	for _, w := range ws {
		if w.Kernel != "" {
			release = w.Kernel
			break
		}
	}
	var uts msg
	uts.str(fUtsnameSysname, "Linux")
	if release != "" {
		uts.str(fUtsnameRelease, release)
	}
	if machine != "" {
		uts.str(fUtsnameMachine, machine)
	}
	var si, p msg
	si.sub(fSystemInfoUtsname, &uts)
	p.varint(fPacketSequenceID, seqKernel)
	p.sub(fPacketSystemInfo, &si)
	o.packet(&p)
}

// processTree names every task seen in the windows. The last name seen
// wins (a task renames itself, or execs). Tasks whose process rtscope does
// not know are their own process.
func (o *writer) processTree(ts uint64, ws []Window, evs []event) {
	names := taskNames(evs)
	pids := map[uint32]uint32{}
	for _, w := range ws {
		for tid, pid := range w.PIDs {
			pids[tid] = pid
		}
	}
	pidOf := func(tid uint32) uint32 {
		if pid, ok := pids[tid]; ok && pid != 0 {
			return pid
		}
		return tid
	}
	tids := make([]uint32, 0, len(names))
	procs := map[uint32]bool{}
	for tid := range names {
		tids = append(tids, tid)
		procs[pidOf(tid)] = true
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	pidList := make([]uint32, 0, len(procs))
	for pid := range procs {
		pidList = append(pidList, pid)
	}
	sort.Slice(pidList, func(i, j int) bool { return pidList[i] < pidList[j] })

	var tree msg
	for _, pid := range pidList {
		// The name of a process is its main thread's: without it, leave
		// the process to Perfetto (it skips processes without cmdline).
		name := names[pid]
		if name == "" {
			continue
		}
		var p msg
		p.sint(fProcessPid, int64(pid))
		p.str(fProcessCmdline, name)
		p.boolean(fProcessCmdlineIsComm, true)
		tree.sub(fTreeProcesses, &p)
	}
	for _, tid := range tids {
		var t msg
		t.sint(fThreadTid, int64(tid))
		t.sint(fThreadTgid, int64(pidOf(tid)))
		if names[tid] != "" {
			t.str(fThreadName, names[tid])
		}
		tree.sub(fTreeThreads, &t)
	}
	var p msg
	p.varint(fPacketTimestamp, ts)
	p.varint(fPacketSequenceID, seqKernel)
	p.sub(fPacketProcessTree, &tree)
	o.packet(&p)
}

// taskNames are the tasks the events name, by tid, each with the last name
// seen ("": none known); the idle task is left out, Perfetto knows it.
func taskNames(evs []event) map[uint32]string {
	names := map[uint32]string{}
	note := func(tid uint32, comm string) {
		if tid == 0 {
			return // the idle task: Perfetto knows it
		}
		if _, ok := names[tid]; !ok {
			names[tid] = ""
		}
		if comm != "" && comm != "?" {
			names[tid] = comm
		}
	}
	for _, ev := range evs {
		e := ev.e
		switch e.Type {
		case trace.EventSwitch:
			note(e.PrevTID, e.PrevComm)
			note(e.NextTID, e.NextComm)
		case trace.EventWakeup:
			note(e.TID, e.Comm)
			if e.Waker != nil && e.Waker.Kind == trace.WakerTask {
				note(e.Waker.TID, e.Waker.Comm)
			}
		case trace.EventStack:
			note(e.TID, e.Comm)
			note(e.WaitingTID, "")
		default:
			note(e.TID, e.Comm)
		}
	}
	return names
}

// ftrace writes the kernel events of one CPU as ftrace event bundles.
func (o *writer) ftrace(cpu int, evs []event) {
	// The task running on the CPU is each event's common pid: before the
	// CPU's first switch it is that switch's prev.
	var curr uint32
	for _, ev := range evs {
		if ev.e.Type == trace.EventSwitch {
			curr = ev.e.PrevTID
			break
		}
	}
	var bundle msg
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		var b, p msg
		b.varint(fBundleCPU, uint64(cpu))
		b.b = append(b.b, bundle.b...)
		p.varint(fPacketSequenceID, seqKernel)
		p.sub(fPacketFtraceEvents, &b)
		o.packet(&p)
		bundle.b, n = bundle.b[:0], 0
	}
	for _, ev := range evs {
		fe, ok := ftraceEvent(ev, curr)
		if ev.e.Type == trace.EventSwitch {
			curr = ev.e.NextTID
		}
		if !ok {
			continue
		}
		bundle.sub(fBundleEvents, fe)
		if n++; n == maxBundle {
			flush()
		}
	}
	flush()
}

// ftraceEvent converts an event to its ftrace event, false for the events
// ftrace has none for. curr is the task running on the event's CPU.
func ftraceEvent(ev event, curr uint32) (*msg, bool) {
	e := ev.e
	var body msg
	var field protowire.Number
	pid := curr
	switch e.Type {
	case trace.EventSwitch:
		field, pid = fEventSchedSwitch, e.PrevTID
		body.str(fSwitchPrevComm, e.PrevComm)
		body.sint(fSwitchPrevPid, int64(e.PrevTID))
		body.sint(fSwitchPrevPrio, int64(e.PrevKPrio))
		body.sint(fSwitchPrevState, PrevState(e.PrevState, e.Preempted))
		body.str(fSwitchNextComm, e.NextComm)
		body.sint(fSwitchNextPid, int64(e.NextTID))
		body.sint(fSwitchNextPrio, int64(e.NextKPrio))
	case trace.EventWakeup:
		field = fEventSchedWaking
		if e.Waker != nil && e.Waker.Kind == trace.WakerTask {
			pid = e.Waker.TID
		}
		body.str(fWakingComm, e.Comm)
		body.sint(fWakingPid, int64(e.TID))
		body.sint(fWakingPrio, int64(e.KPrio))
		if e.TargetCPU != nil {
			body.sint(fWakingTargetCPU, int64(*e.TargetCPU))
		}
	case trace.EventMigrate:
		field = fEventSchedMigrate
		body.str(fMigrateComm, e.Comm)
		body.sint(fMigratePid, int64(e.TID))
		if e.FromCPU != nil {
			body.sint(fMigrateOrigCPU, int64(*e.FromCPU))
		}
		if e.ToCPU != nil {
			body.sint(fMigrateDestCPU, int64(*e.ToCPU))
		}
	case trace.EventIRQEntry:
		field = fEventIrqEntry
		if e.IRQ != nil {
			body.sint(fIrqEntryIrq, int64(*e.IRQ))
		}
		body.str(fIrqEntryName, IRQName(e))
	case trace.EventIRQExit:
		field = fEventIrqExit
		if e.IRQ != nil {
			body.sint(fIrqExitIrq, int64(*e.IRQ))
		}
	case trace.EventSoftirqEntry, trace.EventSoftirqExit:
		field = fEventSoftirqEntry
		if e.Type == trace.EventSoftirqExit {
			field = fEventSoftirqExit
		}
		if e.Vec != nil {
			body.varint(fSoftirqVec, uint64(*e.Vec))
		}
	default:
		return nil, false
	}
	var fe msg
	fe.varint(fEventTimestamp, ev.ts)
	fe.varint(fEventPid, uint64(pid))
	fe.sub(field, &body)
	return &fe, true
}

// IRQName is the name written in an irq_handler_entry event: the IRQ's
// action name, or "irq N" when rtscope could not read it (Perfetto names the
// slice "IRQ (name)").
func IRQName(e *trace.Event) string {
	if e.IRQName != "" {
		return e.IRQName
	}
	if e.IRQ != nil {
		return "irq " + strconv.Itoa(*e.IRQ)
	}
	return "irq"
}

// Task state bits of sched_switch's prev_state since Linux 4.14 (the
// TASK_REPORT states, one bit each; see __trace_sched_switch_state).
const (
	stateInterruptible   = 0x1
	stateUninterruptible = 0x2
	stateStopped         = 0x4
	stateTraced          = 0x8
	stateDead            = 0x10
	stateZombie          = 0x20
	stateParked          = 0x40
	stateIdle            = 0x80
	statePreempted       = 0x100 // TASK_REPORT_MAX: preemption, the task stays runnable
)

// PrevState maps rtscope's state letters of a switched-out task (as
// sched.StateLetters renders them) to the kernel's sched_switch prev_state.
func PrevState(letters string, preempted bool) int64 {
	if preempted || strings.HasSuffix(letters, "+") {
		return statePreempted
	}
	switch {
	case letters == "S":
		return stateInterruptible
	case strings.HasPrefix(letters, "D"): // D(rtlock) too: the kernel reports it as D
		return stateUninterruptible
	case letters == "T":
		return stateStopped
	case letters == "t":
		return stateTraced
	case letters == "X":
		return stateDead
	case letters == "Z":
		return stateZombie
	case letters == "P":
		return stateParked
	case letters == "I":
		return stateIdle
	}
	// R, and raw states outside TASK_REPORT, which the kernel reports as running.
	return 0
}

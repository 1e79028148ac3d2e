// Package trace cuts worst-case windows out of the engine's per-CPU flight
// recorder and turns raw events into readable ones (names, priorities,
// symbolised timer functions and stacks).
package trace

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/rtscope/rtscope/internal/engine"
)

// Event is one decoded flight recorder event. T is relative to the window
// start (negative for the context before it); only the fields of its Type are set.
type Event struct {
	T    int64     `json:"t_ns"`
	TS   uint64    `json:"-"`
	CPU  int       `json:"cpu"`
	Type EventType `json:"type"`

	// switch: prev -> next
	PrevTID    uint32 `json:"prev_tid,omitempty"`
	PrevComm   string `json:"prev_comm,omitempty"`
	PrevSched  string `json:"prev_sched,omitempty"`
	PrevKPrio  int    `json:"prev_kprio,omitempty"`
	PrevState  string `json:"prev_state,omitempty"`
	Preempted  bool   `json:"preempted,omitempty"`
	NextTID    uint32 `json:"next_tid,omitempty"`
	NextComm   string `json:"next_comm,omitempty"`
	NextSched  string `json:"next_sched,omitempty"`
	NextKPrio  int    `json:"next_kprio,omitempty"`
	prevPolicy uint32
	nextPolicy uint32

	// wakeup, migrate, sleep, user_return, handler_*, exit, timer_arm: the task concerned
	TID       uint32 `json:"tid,omitempty"`
	Comm      string `json:"comm,omitempty"`
	Sched     string `json:"sched,omitempty"`
	KPrio     int    `json:"kprio,omitempty"`
	TargetCPU *int   `json:"target_cpu,omitempty"`
	// wakeup: who woke it
	Waker *Waker `json:"waker,omitempty"`

	// migrate
	FromCPU *int `json:"from_cpu,omitempty"`
	ToCPU   *int `json:"to_cpu,omitempty"`

	// irq_*, handler_*: IRQ line; softirq_*: vector
	IRQ     *int   `json:"irq,omitempty"`
	IRQName string `json:"irq_name,omitempty"`
	Vec     *int   `json:"vec,omitempty"`
	VecName string `json:"vec_name,omitempty"`

	// timer_*: callback function, soft expiry (relative to the window start), hard IRQ context
	Function string `json:"function,omitempty"`
	ExpiryT  *int64 `json:"expiry_t_ns,omitempty"`
	HardIRQ  bool   `json:"hardirq,omitempty"`
	// timer_entry, timer_arm: SlackNs is the timer's slack, its hard
	// expiry minus its soft one: the kernel may fire it anywhere in
	// [ExpiryT, ExpiryT+SlackNs] (nil: the engine did not know it).
	SlackNs *uint64 `json:"slack_ns,omitempty"`

	// stack: a timer interrupt's sample of the task running (TID) while WaitingTID waited
	WaitingTID uint32 `json:"waiting_tid,omitempty"`

	// timer_arm: the task armed its own sleeper timer for ExpiryT (one
	// iteration of its loop ended); Missed: that deadline had already
	// passed, so the sleep returns at once.
	Missed bool `json:"missed,omitempty"`

	// sleep: state, armed timer expiry, reason and kernel stack;
	// BlockedIn is the kernel function that told the reason (named at
	// each blocking sleep the kernel walks, rts_sleep_named; sampled stack or not).
	State     string   `json:"state,omitempty"`
	Reason    Reason   `json:"reason,omitempty"`
	BlockedIn string   `json:"blocked_in,omitempty"`
	Stack     []string `json:"stack,omitempty"`

	// faults: page faults TID took in its run from SinceT (its switch-in,
	// relative to the window start; unset when unknown) to T.
	MinorFaults uint32 `json:"minor_faults,omitempty"`
	MajorFaults uint32 `json:"major_faults,omitempty"`

	// steal: the hypervisor did not run this CPU for StealNs somewhere
	// between SinceT (the CPU's previous reading, relative to the window
	// start) and T. faults: SinceT is the run's start.
	StealNs uint64 `json:"steal_ns,omitempty"`
	SinceT  *int64 `json:"since_t_ns,omitempty"`

	// noise: TID's noise interval from SinceT to EndT, the causes of its
	// parts, its largest part's cause (IRQ, Vec or ByTID: who).
	EndT        *int64       `json:"end_t_ns,omitempty"`
	NoiseCauses []NoiseCause `json:"noise_causes,omitempty"`
	TopCause    NoiseCause   `json:"top_cause,omitempty"`
	ByTID       uint32       `json:"by_tid,omitempty"`
	// ipi_send (TID/Comm the sender, TargetCPU the target), ipi_entry and
	// ipi_exit (the receipt on CPU, with its sender when a send was seen).
	IPI *IPI `json:"ipi,omitempty"`
}

// IPI is an inter-processor interrupt's kind and sender.
type IPI struct {
	Kind       IPIKind `json:"kind"`
	SenderTID  uint32  `json:"sender_tid,omitempty"` // 0: no send seen
	SenderPID  uint32  `json:"sender_pid,omitempty"`
	SenderComm string  `json:"sender_comm,omitempty"`
	SenderCPU  *int    `json:"sender_cpu,omitempty"`
	Function   string  `json:"function,omitempty"` // the work (flush_tlb_func), or the callback
	Callsite   string  `json:"callsite,omitempty"` // where the sender queued it
	HandlerNs  uint64  `json:"handler_ns,omitempty"`
	// SentT: an ipi_entry's send, the ipi_send on SenderCPU at this time
	// (relative to the window start), when the window holds it (PairIPIs).
	SentT *int64 `json:"sent_t_ns,omitempty"`
}

// Sender is "comm/tid" of the IPI's sender, "" when unknown.
func (p *IPI) Sender() string {
	if p == nil || p.SenderTID == 0 {
		return ""
	}
	return fmt.Sprintf("%s/%d", p.SenderComm, p.SenderTID)
}

// Waker says who made a task runnable.
type Waker struct {
	Kind     WakerKind `json:"kind"`
	TID      uint32    `json:"tid,omitempty"`
	Comm     string    `json:"comm,omitempty"`
	Sched    string    `json:"sched,omitempty"`
	KPrio    int       `json:"kprio"`
	IRQ      *int      `json:"irq,omitempty"`
	IRQName  string    `json:"irq_name,omitempty"`
	Vec      *int      `json:"vec,omitempty"`
	VecName  string    `json:"vec_name,omitempty"`
	Function string    `json:"function,omitempty"`
}

// Trace is the window of one worst case.
type Trace struct {
	Metric    string `json:"metric"`
	TID       uint32 `json:"tid"`
	Value     uint64 `json:"value_ns"`
	Start     uint64 `json:"start_ns"` // CLOCK_MONOTONIC
	End       uint64 `json:"end_ns"`
	CPUStart  int    `json:"cpu_start"`
	CPUEnd    int    `json:"cpu_end"`
	CPUs      []int  `json:"cpus"`
	Truncated bool   `json:"truncated"`
	Note      string `json:"note,omitempty"`
	// StealClock tells whether the kernel's steal clock was readable, so
	// that the absence of steal events means no steal (not: unknown).
	StealClock bool `json:"steal_clock"`
	// IPISendersUnseen says why IPI sends were not recorded ("": they
	// were, or the window is older than this field): an IPI received with
	// no send is then unattributed, not one nobody sent.
	IPISendersUnseen string `json:"ipi_senders_unseen,omitempty"`
	// Monitor lists rtscope's own threads (the watching process's) when the
	// window was analysed: the analysis names them as the monitor.
	Monitor []uint32 `json:"monitor_tids,omitempty"`
	// SparseUntil: before this time (relative to the window start) the
	// window holds only the task's own events (its switches, wakeups,
	// sleeps, timer arming), not what else ran: the rings no longer held
	// it (the task's events are kept beyond them, Snapshot.KeepOwn), or the
	// window has more events than Window.MaxEvents. Not truncated: none
	// of the task's events is missing.
	SparseUntil *int64 `json:"sparse_until_t_ns,omitempty"`
	// Overwritten lists the CPUs whose flight recorder lapped past the
	// window's start before it was read (Truncated): what each ran before
	// its first event here is unknown, not what that event says.
	Overwritten []int   `json:"overwritten_cpus,omitempty"`
	Events      []Event `json:"events"`
}

// Source is where events come from: the engine, or a fake in tests.
type Source interface {
	NumCPU() int
	FlightPerCPU() uint32
	Heads() ([]uint64, error)
	// FlightRing is cpu's ring in place (engine.Engine.FlightRing).
	FlightRing(cpu int) []engine.Event
}

// Window is what to cut.
type Window struct {
	Metric   string
	TID      uint32
	Value    uint64
	Start    uint64
	End      uint64
	CPUStart int
	CPUEnd   int
	// StealClock: the engine reads hypervisor steal (Trace.StealClock).
	StealClock bool
	// IPISendersUnseen: why the engine records no IPI sends, "" when it does (Trace.IPISendersUnseen).
	IPISendersUnseen string
	// MaxEvents bounds the events kept (0: no bound): the task's own
	// across the window, the others nearest its end, where the maximum was
	// reached (Trace.SparseUntil); when the task's own are more, the last
	// MaxEvents, truncated.
	MaxEvents int
}

// contextBefore is how far before the window events are kept for context
// (who was running when the window opened, the task's sleep): at most this
// long, and only back to the last switch on each CPU.
const contextBefore = 50_000_000

// raw is an undecoded event with its CPU ring position.
type raw struct {
	engine.Event
	seq uint64
}

// reread is how many of the last slots before a CPU's head each Take
// reads again at the next one. BPF takes a slot's sequence number, then
// fills the slot, and a program interrupted between the two (by an IRQ
// whose programs write events of their own) can leave a slot half-written
// behind newer ones: a copy of it is not kept for good. A slot still
// holding an older sequence number is read again from there, however far
// behind the head.
const reread = 64 // a quarter of the ring at most

// Snapshot is a copy of every CPU's ring, oldest event first, used to cut
// any number of windows. It is kept up to date incrementally (TakeInto):
// each Take copies only the events written since the previous one. Not
// safe for concurrent use: Cut reuses its scratch buffers.
type Snapshot struct {
	per  uint64  // the rings' depth (Source.FlightPerCPU)
	cpus [][]raw // per CPU: the events of its ring, in sequence order
	// buf is each CPU's backing array, twice the ring's depth: cpus[cpu]
	// slides along it and is moved back to its start when it reaches the
	// end, so that keeping up costs a copy of each event once, amortised.
	buf     [][]raw
	next    []uint64 // per CPU: the sequence number the next Take reads from
	learnt  []int    // per CPU: cpus[cpu][learnt:] is not Learnt yet
	wrapped []bool   // the ring has been overwritten at least once
	own     ownLog   // some tasks' own events (KeepOwn)
	// scratch of Cut, reused: a window's events are copied out of it, and
	// a fresh pair per cut was most of the monitor's garbage (perf, 1000
	// tracked threads)
	all, kept []raw
}

// Take copies the rings. Slots being rewritten while read are dropped (their
// sequence number no longer matches).
func Take(src Source) (*Snapshot, error) { return TakeInto(src, nil) }

// TakeInto brings an earlier snapshot of src up to date (nil: a new one):
// only the events written since it was taken are copied, or the whole
// ring of a CPU that wrapped since. A monitor polling a hundred times a
// second copies each event about once and makes no garbage. Windows cut
// from the earlier snapshot stay valid (they are copied).
func TakeInto(src Source, sn *Snapshot) (*Snapshot, error) {
	heads, err := src.Heads()
	if err != nil {
		return nil, err
	}
	n := uint64(src.FlightPerCPU())
	ncpu := min(len(heads), src.NumCPU())
	if sn == nil || sn.per != n || len(sn.cpus) != ncpu {
		var own ownLog
		if sn != nil {
			own = sn.own // tasks kept before the first copy
		}
		sn = &Snapshot{per: n, own: own}
		if len(sn.own.fed) != ncpu {
			sn.own.resize(ncpu)
		}
		sn.cpus = make([][]raw, ncpu)
		sn.buf = make([][]raw, ncpu)
		sn.next = make([]uint64, ncpu)
		sn.learnt = make([]int, ncpu)
		sn.wrapped = make([]bool, ncpu)
	}
	for cpu := 0; cpu < ncpu; cpu++ {
		sn.update(src, cpu, heads[cpu])
	}
	return sn, nil
}

// update copies cpu's events from its cursor to head.
func (sn *Snapshot) update(src Source, cpu int, head uint64) {
	n := sn.per
	first := uint64(0) // the oldest sequence number the ring still holds
	if head > n {
		first = head - n
	}
	evs, from := sn.cpus[cpu], sn.next[cpu]
	if head < from {
		from = 0 // another recorder (a new engine): start again
		evs = evs[:0]
	}
	if from < first {
		// Wrapped since the last Take: what is kept is older than the
		// ring, and the events in between are gone.
		from = first
		evs = evs[:0]
	}
	// Drop what the ring no longer holds, so that the copy spans the same
	// events as the ring, and what is read again.
	drop := sort.Search(len(evs), func(i int) bool { return evs[i].seq >= first })
	evs = evs[drop:]
	evs = evs[:sort.Search(len(evs), func(i int) bool { return evs[i].seq >= from })]
	sn.learnt[cpu] = min(max(sn.learnt[cpu]-drop, 0), len(evs))
	if sn.buf[cpu] == nil {
		sn.buf[cpu] = make([]raw, 0, 2*n)
	}
	if len(evs)+int(head-from) > cap(evs) {
		// At the end of the backing array: move back to its start.
		evs = append(sn.buf[cpu][:0], evs...)
	}
	ring := src.FlightRing(cpu)
	next := max(first, head-min(head, reread, n/4))
	for seq := from; seq < head; seq++ {
		ev := ring[seq&(n-1)] // copied, then checked: BPF may be rewriting the slot
		if d := int32(ev.Seq - uint32(seq)); d != 0 || ev.Type == 0 {
			if d <= 0 {
				next = min(next, seq) // not written yet: read it again next time
			}
			continue // or overwritten by a newer event while copying
		}
		evs = append(evs, raw{ev, seq})
	}
	sn.cpus[cpu], sn.next[cpu] = evs, next
	sn.wrapped[cpu] = head > n
}

// copied returns the oldest sequence number of each CPU's copy (0: it
// holds every event since the recorder started; the head: none).
func (sn *Snapshot) copied() []uint64 {
	out := make([]uint64, len(sn.cpus))
	for cpu, evs := range sn.cpus {
		switch {
		case !sn.wrapped[cpu]:
		case len(evs) > 0:
			out[cpu] = evs[0].seq
		default:
			out[cpu] = sn.next[cpu]
		}
	}
	return out
}

// Learn feeds the names of the tasks seen in the events copied since the
// previous Learn (every event of a new snapshot) to names.
func (sn *Snapshot) Learn(names *Names) {
	for cpu, evs := range sn.cpus {
		for i := sn.learnt[cpu]; i < len(evs); i++ {
			names.learnOnly(&evs[i].Event)
		}
		sn.learnt[cpu] = len(evs)
	}
}

// Cut copies one window out of the flight recorder (a fresh snapshot).
func Cut(src Source, w Window, names *Names) (*Trace, error) {
	sn, err := Take(src)
	if err != nil {
		return nil, err
	}
	sn.Learn(names)
	return sn.Cut(w, names).Decode(names), nil
}

// Cut extracts a window: every CPU's events in [Start, End], plus context back
// to the last switch before Start; the CPUs the task used or was woken from
// are kept, and on other CPUs only the events naming the task. Where a ring
// no longer reaches back to the window start, the task's own events kept
// beyond it (KeepOwn) fill the window, sparse there (Trace.SparseUntil);
// without them the trace is truncated, with a note saying so.
func (sn *Snapshot) Cut(w Window, names *Names) *Raw {
	tr := &Trace{Metric: w.Metric, TID: w.TID, Value: w.Value, Start: w.Start, End: w.End,
		CPUStart: w.CPUStart, CPUEnd: w.CPUEnd, StealClock: w.StealClock, IPISendersUnseen: w.IPISendersUnseen}
	pre := make(preTrim, len(sn.cpus))
	all := sn.all[:0]
	var missing []int
	for cpu, evs := range sn.cpus {
		var lapped bool
		all, lapped = sn.cutCPU(all, cpu, evs, w, pre)
		if lapped {
			missing = append(missing, cpu)
		}
	}
	var own bool
	var sparse uint64
	if len(missing) > 0 {
		all, own, sparse = sn.fillFromOwn(all, missing, w)
	}
	involved := involvedCPUs(all, w)
	for cpu := range involved {
		tr.CPUs = append(tr.CPUs, cpu)
	}
	sort.Ints(tr.CPUs)
	if !own {
		sn.noteOverwritten(tr, missing, involved)
	}
	kept := sn.kept[:0]
	for _, r := range all {
		if involved[int(r.Cpu)] || mentions(r.Event, w.TID) || sentTo(r.Event, involved) {
			kept = append(kept, r)
		}
	}
	// By time (CPUs interleaved), each CPU's in ring order: the generic
	// sort, as the reflection-based sort.SliceStable took a quarter of a
	// poll (BenchmarkPollSnapshot).
	slices.SortStableFunc(kept, func(a, b raw) int {
		if c := cmp.Compare(a.Ts, b.Ts); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	sn.all, sn.kept = all[:0], kept[:0] // before kept loses its front
	// The events left out before the copy count as trimmed here: those of
	// the CPUs kept, as the rest would not have been kept.
	preN, preLast := pre.of(involved)
	kept, sparse = trimToOwn(kept, w, preN, preLast, sparse)
	if sparse > w.Start && !tr.Truncated {
		t := int64(sparse - w.Start)
		tr.SparseUntil = &t
		tr.Note = fmt.Sprintf("until %s us after its start the window holds only the task's own events (switches, wakeups, sleeps, timer arming) and hypervisor steal, kept as they were written: "+
			"what else ran then had been overwritten in the flight recorder or is beyond --trace-max-events", strconv.FormatFloat(float64(t)/1e3, 'f', 1, 64))
	}
	if w.MaxEvents > 0 && len(kept) > w.MaxEvents {
		drop := len(kept) - w.MaxEvents
		tr.Truncated = true
		tr.Note = fmt.Sprintf("window too long: %d events; the first %d (up to %s us after its start) are left out, the last %d kept (raise --trace-max-events)",
			len(kept)+preN, drop+preN, strconv.FormatFloat(float64(int64(kept[drop].Ts)-int64(w.Start))/1e3, 'f', 1, 64), w.MaxEvents)
		kept = kept[drop:]
	}
	return newRaw(tr, kept, names)
}

// cutCPU appends to all the events of one CPU's copy that the window w
// needs: those in [Start, End], the context back to the last switch before
// Start, and the steal and stack samples just after End. Beyond
// w.MaxEvents, the oldest events not naming the task are counted in
// pre[cpu] instead. lapped tells that the ring no longer reaches back to
// Start.
func (sn *Snapshot) cutCPU(all []raw, cpu int, evs []raw, w Window, pre preTrim) (_ []raw, lapped bool) {
	// First event after End, then walk back to the context before Start.
	hi := sort.Search(len(evs), func(i int) bool { return evs[i].Ts > w.End })
	lo := sort.Search(len(evs), func(i int) bool { return evs[i].Ts >= w.Start })
	ctx := lo
	for ctx > 0 && w.Start-evs[ctx-1].Ts <= contextBefore {
		ctx--
		if evs[ctx].Type == evSwitch {
			break
		}
	}
	lapped = lo == 0 && sn.wrapped[cpu] && (len(evs) == 0 || evs[0].Ts > w.Start)
	run := evs[ctx:hi]
	if w.MaxEvents > 0 && len(run) > w.MaxEvents {
		// Of the CPU's events older than its last MaxEvents, only
		// those naming the task can outlive the trim below (which
		// keeps the task's own and the others' nearest the end): the
		// rest are left out here, before the copy and the sort. A
		// window of a second under load held 16,000 events for 1024
		// kept, and cutting was most of the agent's warm-up at 1000
		// tracked threads.
		old := run[:len(run)-w.MaxEvents]
		var left preLeft
		for i := range old {
			if mentions(old[i].Event, w.TID) {
				all = append(all, old[i])
			} else {
				left.n++
				left.last = max(left.last, old[i].Ts+1)
			}
		}
		pre[cpu] = left
		run = run[len(old):]
	}
	all = append(all, run...)
	// Steal is read at context switches: time the hypervisor took
	// inside the window shows at the CPU's first switch after it. The
	// stack of the task a late timer interrupt stopped is sampled in
	// the callback that wakes the task, just after a timer-irq
	// window's end.
	for i := hi; i < len(evs) && evs[i].Ts-w.End <= contextBefore; i++ {
		if evs[i].Type == evSteal || (evs[i].Type == evStack && evs[i].B == w.TID) {
			all = append(all, evs[i])
		}
		if evs[i].Type == evSwitch {
			break
		}
	}
	return all, lapped
}

// fillFromOwn makes the window whole where the rings of the missing CPUs
// no longer reach its start, from the task's own events kept beyond them
// (KeepOwn), sparse there: when the rings lapped before they were read, if
// the task's own numbers show it lost none of them. Without that, all is
// returned as it was, own false and sparse 0.
func (sn *Snapshot) fillFromOwn(all []raw, missing []int, w Window) (_ []raw, own bool, sparse uint64) {
	copied := sn.copied()
	c := sn.own.covers(w.TID, w.Start, copied)
	fill := len(all)
	for _, cpu := range missing {
		if c == coverNone {
			break // truncated below where involved: nothing to fill from
		}
		reach := w.End
		if evs := sn.cpus[cpu]; len(evs) > 0 {
			reach = min(reach, evs[0].Ts)
		}
		all = append(all, sn.own.events(w.TID, cpu, w.Start, reach)...)
		all = append(all, sn.own.stealEvents(cpu, w.Start, reach)...)
		sparse = max(sparse, reach)
	}
	own = c == coverWhole
	if c == coverNumbered {
		anchor, whole := ownNumbers(w.TID, w.Start, w.End, sn.own.keptEvents(w.TID), all)
		own = whole && sn.own.numbered(anchor, copied)
	}
	if !own {
		return all[:fill], false, 0
	}
	return all, true, sparse
}

// involvedCPUs are the CPUs the window starts and ends on, and those the
// task switched in or out on since its start.
func involvedCPUs(all []raw, w Window) map[int]bool {
	involved := map[int]bool{w.CPUStart: true, w.CPUEnd: true}
	for _, r := range all {
		if r.Type == evSwitch && (r.A == w.TID || r.B == w.TID) && r.Ts >= w.Start {
			involved[int(r.Cpu)] = true
		}
	}
	return involved
}

// noteOverwritten marks tr truncated when an involved CPU's ring no longer
// reaches the window's start and nothing filled it, saying what is lost.
func (sn *Snapshot) noteOverwritten(tr *Trace, missing []int, involved map[int]bool) {
	for _, cpu := range missing {
		if !involved[cpu] {
			continue
		}
		tr.Truncated = true
		tr.Overwritten = append(tr.Overwritten, cpu)
		lost := "its first events are missing"
		if evs := sn.cpus[cpu]; len(evs) == 0 || evs[0].Ts > tr.End {
			// Read after the ring lapped past the window's end (a
			// reader stalled while another CPU wrote its notice).
			lost = "none of its events there are left"
		}
		tr.Note = "the flight recorder of CPU " + itoa(cpu) +
			" was overwritten before the window could be read: " + lost + " (raise --trace-events)"
	}
}

// trimToOwn fits a window over w.MaxEvents (counting the preN events left
// out before the copy, the newest at preLast) by dropping the oldest events
// that are not the task's own, when the task's own fit: it returns the
// events kept and how far (sparse) the window holds only the task's own.
func trimToOwn(kept []raw, w Window, preN int, preLast, sparse uint64) ([]raw, uint64) {
	own, steal := ownCount(kept, w.TID)
	if w.MaxEvents <= 0 || len(kept)+preN <= w.MaxEvents || own >= w.MaxEvents {
		return kept, sparse
	}
	sparse = max(sparse, preLast)
	// The task's own events across the window, the others' nearest its
	// end, where the value was reached; and the hypervisor's steal
	// where it fits: a vCPU stall inside the sparse part is what the
	// analysis charges the wait to (a window of a 1 s period that
	// lost its 83 ms steal blamed the task that was current then).
	keepSteal := own+steal <= w.MaxEvents
	drop := len(kept) - w.MaxEvents
	out := kept[:0]
	for _, r := range kept {
		if drop > 0 && !ownEvent(&r, w.TID) && (r.Type != evSteal || !keepSteal) {
			drop--
			sparse = max(sparse, r.Ts+1)
			continue
		}
		out = append(out, r)
	}
	return out, sparse
}

// newRaw keeps the events of a cut window with its metadata, and resolves
// their stacks now: stack ids are reused later.
func newRaw(tr *Trace, kept []raw, names *Names) *Raw {
	rw := &Raw{meta: *tr, events: make([]engine.Event, len(kept))}
	for i, r := range kept {
		rw.events[i] = r.Event
		if id := engine.EventStackID(&rw.events[i]); id >= 0 {
			if rw.stacks == nil {
				rw.stacks = map[uint32][]string{}
			}
			if _, ok := rw.stacks[uint32(id)]; !ok {
				rw.stacks[uint32(id)] = names.frames(uint32(id))
			}
		}
	}
	return rw
}

// preTrim is, per CPU, what Cut leaves out before its copy.
type preTrim []preLeft

// preLeft counts the events left out, and the newest of them (its time
// + 1).
type preLeft struct {
	n    int
	last uint64
}

// of sums the events left out on the CPUs of cpus.
func (p preTrim) of(cpus map[int]bool) (n int, last uint64) {
	for cpu := range cpus {
		if cpu >= 0 && cpu < len(p) {
			n += p[cpu].n
			last = max(last, p[cpu].last)
		}
	}
	return n, last
}

// Raw is a cut window kept compactly (48 bytes an event) until it is shown:
// its stacks are resolved at cut time, since stack ids are reused later.
type Raw struct {
	meta   Trace
	events []engine.Event
	stacks map[uint32][]string
}

// Value is the metric value of the window.
func (r *Raw) Value() uint64 { return r.meta.Value }

// Truncated tells whether the window's start was lost.
func (r *Raw) Truncated() bool { return r.meta.Truncated }

// Decode turns the window into readable events.
func (r *Raw) Decode(names *Names) *Trace {
	tr := r.meta
	tr.Events = make([]Event, 0, len(r.events))
	if names != nil {
		names.pinned = r.stacks
		defer func() { names.pinned = nil }()
	}
	for _, e := range r.events {
		tr.Events = append(tr.Events, names.decode(e, r.meta.Start))
	}
	pairIPIs(tr.Events)
	return &tr
}

// ownEvent tells whether r names task tid as its subject (steal, which
// every task's window keeps, is context).
func ownEvent(r *raw, tid uint32) bool {
	return r.Type != evSteal && mentions(r.Event, tid)
}

// ownCount counts the events of evs that name task tid, and the steal
// events.
func ownCount(evs []raw, tid uint32) (own, steal int) {
	for i := range evs {
		switch {
		case evs[i].Type == evSteal:
			steal++
		case mentions(evs[i].Event, tid):
			own++
		}
	}
	return own, steal
}

func mentions(e engine.Event, tid uint32) bool {
	switch e.Type {
	case evSwitch:
		return e.A == tid || e.B == tid
	case evWakeup, evMigrate, evSleep, evUserReturn, evHandlerEntry, evHandlerExit, evExit, evTimerArm:
		return e.A == tid
	case evSteal:
		// Kept from every CPU: a stall of one CPU can hold kernel code on
		// another (waiting for a callback or a lock there).
		return true
	}
	return false
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

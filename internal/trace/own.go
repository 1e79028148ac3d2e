package trace

import (
	"cmp"
	"math"
	"slices"

	"github.com/rtscope/rtscope/internal/engine"
)

// OwnPerTask is how many of its own events (those naming it) a task kept
// by KeepOwn holds beyond the rings' reach: a task waking once a second
// writes 5 to 10 an activation (wakeup, switches, timer arming, sleep), so
// a window of a second or two is whole; a busier task holds less time,
// and its long windows stay truncated. 56 bytes an event: 7 KB a task,
// 7 MB at 1000 periodic threads.
const OwnPerTask = 128

// ownLog keeps the own events of some tasks (KeepOwn) as the snapshot
// copies them, beyond the rings' reach: a window longer than the rings
// hold (a period of a second under load) keeps the task's events across
// its whole span, and the other tasks' only where the rings still held
// them. It is whole while Follow reads the rings before they wrap (every
// poll); across a gap (since, gaps), a window is whole when the own
// numbers of the task's events (Event.Own) show that the gap held none
// of them (ownNumbers).
type ownLog struct {
	tasks map[uint32]*ownRing
	bits  []uint64 // the tids of tasks, a bit each: most events name none
	fed   []uint64 // per CPU: the events below this sequence number were read (Follow)
	// since is, per CPU, the time from which the copy has no gap: 0 while
	// it holds every event since the recorder started, math.MaxUint64
	// after a gap until an event is copied.
	since []uint64
	// gaps: the latest gaps, oldest first (at most maxGaps): how many
	// events each lost decides whether own numbers can tell that a task
	// lost none in it (numbered)
	gaps []gap
	// steal: each CPU's latest steal events (ownStealPerCPU), read with
	// the kept tasks' own: a vCPU stall inside a window's sparse part is
	// what its verdict charges the wait to
	steal []stealRing
	// pending: tasks kept since the last Follow, whose events the rings
	// still hold are read back first (pbits: their tids, a bit each).
	pending []uint32
	pbits   []uint64
	// busy: tasks no longer kept (ownMinSpan), not kept again
	busy map[uint32]bool
}

// ownMinSpan is the least time OwnPerTask events of a kept task must span:
// a busier task is no longer kept (its windows longer than the rings
// would outlast its own events too, and copying all of them is what
// keeping costs: 102 busy tasks kept took the agent at 300,000 switches
// a second from 1.9% to 3.9% of a CPU).
const ownMinSpan = 100_000_000

// ownRing is one task's own events, oldest first from start.
type ownRing struct {
	evs   []raw
	start int
	// from: every event of the task after this time is kept (KeepOwn);
	// evicted: the newest event dropped for room.
	from, evicted uint64
}

// gap is events a CPU's ring overwrote before Follow read them.
type gap struct {
	cpu  int
	lost uint64
	// at: the time of the first event read after it (no event lost is
	// newer), math.MaxUint64 until one is read
	at uint64
}

// stealRing is one CPU's steal events, oldest first from start.
type stealRing struct {
	evs   []raw
	start int
}

// ownStealPerCPU is how many steal events of each CPU the log keeps
// beyond the rings: one is written at a switch after the vCPU lost time,
// 9 in 2 s of stress-ng --switch 2 on this VM (2.56 million events), so
// the latest 256 span far more than a window of a second.
const ownStealPerCPU = 256

// maxGaps is how many gaps the log remembers: a window opened before
// the oldest of them is not told whole by its numbers.
const maxGaps = 64

func (o *ownLog) resize(ncpu int) {
	o.fed = make([]uint64, ncpu)
	o.since = make([]uint64, ncpu)
	o.gaps = o.gaps[:0]
	o.steal = make([]stealRing, ncpu)
}

// addSteal keeps a steal event of cpu, the oldest dropped for room.
func (o *ownLog) addSteal(cpu int, r *raw) {
	s := &o.steal[cpu]
	if len(s.evs) < ownStealPerCPU {
		s.evs = append(s.evs, *r)
		return
	}
	s.evs[s.start] = *r
	s.start = (s.start + 1) % len(s.evs)
}

// stealEvents returns cpu's steal events kept in [from, to), oldest first.
func (o *ownLog) stealEvents(cpu int, from, to uint64) []raw {
	if cpu >= len(o.steal) {
		return nil
	}
	s := &o.steal[cpu]
	var out []raw
	for i := range s.evs {
		if r := s.evs[(s.start+i)%len(s.evs)]; r.Ts >= from && r.Ts < to {
			out = append(out, r)
		}
	}
	return out
}

// addGap remembers a gap of lost events on cpu.
func (o *ownLog) addGap(cpu int, lost uint64) {
	if len(o.gaps) == maxGaps {
		o.gaps = append(o.gaps[:0], o.gaps[1:]...)
	}
	o.gaps = append(o.gaps, gap{cpu: cpu, lost: lost, at: math.MaxUint64})
}

func (o *ownLog) kept(tid uint32) bool {
	i := int(tid / 64)
	return i < len(o.bits) && o.bits[i]&(1<<(tid%64)) != 0
}

// KeepOwn starts keeping tid's own events beyond the rings' reach, from
// the oldest the rings still hold at the next Follow: its windows that
// open from then on are whole while every Follow comes before the rings
// wrap. A session keeps the
// tasks whose windows outlast the rings (periodic ones), not busy tasks
// whose windows are short: each event kept is a copy and a lookup.
func (sn *Snapshot) KeepOwn(tid uint32) {
	o := &sn.own
	if o.tasks == nil {
		o.tasks = map[uint32]*ownRing{}
	}
	if _, ok := o.tasks[tid]; ok || o.busy[tid] {
		return
	}
	o.tasks[tid] = &ownRing{from: math.MaxUint64} // set by the next Follow
	for int(tid/64) >= len(o.bits) {
		o.bits = append(o.bits, 0)
		o.pbits = append(o.pbits, 0)
	}
	o.bits[tid/64] |= 1 << (tid % 64)
	o.pbits[tid/64] |= 1 << (tid % 64)
	o.pending = append(o.pending, tid)
}

// ForgetOwn drops tid's own events (it exited, or is no longer watched).
func (sn *Snapshot) ForgetOwn(tid uint32) {
	o := &sn.own
	delete(o.busy, tid)
	o.forget(tid)
}

func (o *ownLog) forget(tid uint32) {
	if _, ok := o.tasks[tid]; !ok {
		return
	}
	delete(o.tasks, tid)
	o.bits[tid/64] &^= 1 << (tid % 64)
	o.pbits[tid/64] &^= 1 << (tid % 64) // if pending, read back for nothing
}

// Follow reads the events written since the last Follow in place, in
// the mapped rings, and keeps those naming the tasks of KeepOwn: at every
// poll, so that their windows stay whole beyond the rings. It copies
// nothing else (the snapshot is brought up to date by TakeInto, for the
// windows cut): nothing an event while no task is kept, about 12 ns with
// a tenth of the events' tasks kept, where a copy with its names costs
// about 45 (BenchmarkPollSnapshot); copying at every poll made the agent
// at 300,000 switches a second take 4.8% of a CPU instead of 1.3. The last slots before a head
// and a slot still holding an older sequence number are read again at
// the next Follow, as TakeInto does (reread).
func (sn *Snapshot) Follow(src Source) error {
	heads, err := src.Heads()
	if err != nil {
		return err
	}
	n := uint64(src.FlightPerCPU())
	ncpu := min(len(heads), src.NumCPU())
	o := &sn.own
	if sn.per == 0 {
		sn.per = n // TakeInto sizes the rest at its first copy
	}
	if sn.per != n {
		return nil // another recorder: TakeInto starts again
	}
	if len(o.fed) != ncpu {
		o.resize(ncpu)
	}
	if len(o.pending) > 0 {
		o.readBack(src, heads, n)
	}
	for cpu := 0; cpu < ncpu; cpu++ {
		o.follow(src.FlightRing(cpu), cpu, heads[cpu], n)
	}
	return nil
}

// readBack keeps the events of the tasks kept since the last Follow that
// the rings still hold, before those Follow reads: a task is kept at its
// first timer notice, after the wakeup that opened its first period
// (under load, often more than the last read back). Their events are
// whole from the oldest time every ring still reaches.
func (o *ownLog) readBack(src Source, heads []uint64, n uint64) {
	from := uint64(0)
	for cpu := range o.fed {
		ring, head := src.FlightRing(cpu), heads[cpu]
		first := uint64(0)
		if head > n {
			first = head - n
		}
		lost := first > 0 // events before first are gone: whole from the next one
		for seq := first; seq < min(o.fed[cpu], head); seq++ {
			e := &ring[seq&(n-1)]
			if e.Seq != uint32(seq) {
				lost = true // overwritten while read (or never written)
				continue
			}
			if lost {
				from, lost = max(from, e.Ts), false
			}
			a, b, typ := e.A, e.B, e.Type
			if typ == evSteal || typ == evStack || (!o.pendingTID(a) && !(typ == evSwitch && o.pendingTID(b))) {
				continue
			}
			r := raw{*e, seq}
			if r.Seq != uint32(seq) {
				continue
			}
			if typ == evSwitch && b != a && o.pendingTID(b) {
				o.add(b, &r)
			}
			if o.pendingTID(a) && mentions(r.Event, a) {
				o.add(a, &r)
			}
		}
	}
	for _, tid := range o.pending {
		if t := o.tasks[tid]; t != nil && o.pendingTID(tid) {
			t.from = max(from, 1) - 1 // kept: every event at from or later
		}
		o.pbits[tid/64] &^= 1 << (tid % 64)
	}
	o.pending = o.pending[:0]
}

func (o *ownLog) pendingTID(tid uint32) bool {
	i := int(tid / 64)
	return i < len(o.pbits) && o.pbits[i]&(1<<(tid%64)) != 0
}

// follow reads cpu's ring from its cursor to the reread tail before head.
func (o *ownLog) follow(ring []engine.Event, cpu int, head, n uint64) {
	first := uint64(0)
	if head > n {
		first = head - n
	}
	from := o.fed[cpu]
	if head < from || from < first {
		// Events were overwritten before they were read (or the recorder
		// started again): no window before the next event is whole, unless
		// its task's own numbers say so.
		lost := uint64(math.MaxUint64)
		if head >= from {
			lost = first - from
		}
		o.since[cpu] = math.MaxUint64
		o.addGap(cpu, lost)
		from = first
	}
	stop := max(from, head-min(head, reread, n/4))
	if stop == from {
		return
	}
	if e := &ring[from&(n-1)]; o.since[cpu] == math.MaxUint64 && e.Seq == uint32(from) {
		o.since[cpu] = e.Ts // else at the next Follow
		for i := range o.gaps {
			if g := &o.gaps[i]; g.cpu == cpu && g.at == math.MaxUint64 {
				g.at = e.Ts
			}
		}
	}
	if len(o.tasks) == 0 {
		o.fed[cpu] = stop // no task kept: nothing to read but the cursor
		return
	}
	for seq := from; seq < stop; seq++ {
		e := &ring[seq&(n-1)]
		d := int32(e.Seq - uint32(seq))
		if d < 0 || (d == 0 && e.Type == 0) {
			stop = seq // not written yet: read it, and what follows, again next time
			break
		}
		if d > 0 {
			continue // overwritten by a newer event while read
		}
		a, b, typ := e.A, e.B, e.Type
		if typ == evSteal {
			if r := (raw{*e, seq}); r.Seq == uint32(seq) {
				o.addSteal(cpu, &r)
			}
			continue
		}
		if typ == evStack || (!o.kept(a) && !(typ == evSwitch && o.kept(b))) {
			continue // names no kept task: most events
		}
		r := raw{*e, seq} // copied, then checked: BPF may be rewriting the slot
		if r.Seq != uint32(seq) {
			continue
		}
		if typ == evSwitch && b != a && o.kept(b) {
			o.add(b, &r)
		}
		if o.kept(a) && mentions(r.Event, a) {
			o.add(a, &r)
		}
	}
	o.fed[cpu] = stop
}

func (o *ownLog) add(tid uint32, r *raw) {
	t := o.tasks[tid]
	if len(t.evs) < OwnPerTask {
		t.evs = append(t.evs, *r)
		return
	}
	if old := t.evs[t.start].Ts; r.Ts < old+ownMinSpan {
		if o.busy == nil {
			o.busy = map[uint32]bool{}
		}
		o.busy[tid] = true
		o.forget(tid)
		return
	}
	t.evicted = max(t.evicted, t.evs[t.start].Ts)
	t.evs[t.start] = *r
	t.start = (t.start + 1) % len(t.evs)
}

// cover is how far the own log holds a task's events from a time on.
type cover int

const (
	coverNone     cover = iota // some are missing
	coverWhole                 // every one was kept
	coverNumbered              // every one unless a gap held some: the task's own numbers tell (ownNumbers)
)

// covers tells whether every event of tid from start on was kept, up to
// where the snapshot's copy of each ring begins (copied[cpu]: its oldest
// sequence number, 0 when it holds every event of the CPU).
func (o *ownLog) covers(tid uint32, start uint64, copied []uint64) cover {
	t := o.tasks[tid]
	if t == nil || t.from >= start || (t.evicted != 0 && t.evicted >= start) || len(o.since) != len(copied) {
		return coverNone
	}
	c := coverWhole
	for cpu, s := range o.since {
		if s > start || o.fed[cpu] < copied[cpu] {
			c = coverNumbered // a gap before start, or between the read and the copy
		}
	}
	return c
}

// maxNumberedLoss bounds the events lost in the gaps across which own
// numbers (16 bits, 0 skipped) tell a task's loss: a task cannot lose
// more of its events than the rings lost, and a hole of half the
// numbers' range (32767) would read as numbers going back. An 83 ms vCPU
// stall of the reader's CPU at 1000 tracked threads lost about 20,000
// events of the other CPU.
const maxNumberedLoss = 32000

// numbered tells whether the gaps newer than anchor (the time of a task's
// numbered event before its window) lost few enough events that a hole
// in its own numbers shows: those Follow missed, and those between each
// CPU's read (fed) and the snapshot's copy (copied).
func (o *ownLog) numbered(anchor uint64, copied []uint64) bool {
	if len(o.gaps) == maxGaps && o.gaps[0].at > anchor {
		return false // gaps forgotten before the oldest may be newer than anchor
	}
	lost := uint64(0)
	for _, g := range o.gaps {
		if g.at > anchor {
			lost += min(g.lost, maxNumberedLoss)
		}
	}
	for cpu := range o.fed {
		if cpu < len(copied) && o.fed[cpu] < copied[cpu] {
			lost += min(copied[cpu]-o.fed[cpu], maxNumberedLoss)
		}
	}
	return lost < maxNumberedLoss
}

// ownNumbers tells whether evs hold every event of task tid's own from
// its last numbered one before start to its first numbered one at or
// after end (anchor: the time of the former): their own numbers
// (Event.Own, rts_own_seq in BPF) leave no hole, and between two of its
// switches in, its switch out (numbered for the task switched in) is
// there. The sets may hold an event twice (kept in the own log and
// copied from the ring).
func ownNumbers(tid uint32, start, end uint64, sets ...[]raw) (anchor uint64, whole bool) {
	var own []raw
	for _, evs := range sets {
		for i := range evs {
			if ownEvent(&evs[i], tid) {
				own = append(own, evs[i])
			}
		}
	}
	slices.SortFunc(own, func(a, b raw) int {
		if c := cmp.Compare(a.Ts, b.Ts); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Cpu, b.Cpu); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	own = slices.CompactFunc(own, func(a, b raw) bool { return a.Cpu == b.Cpu && a.seq == b.seq })
	first, last := -1, -1
	for i := range own {
		if !numberedFor(&own[i], tid) {
			continue
		}
		if own[i].Ts < start {
			first = i
		} else if own[i].Ts >= end {
			last = i
			break
		}
	}
	if first < 0 || last < 0 {
		return 0, false
	}
	own = own[first : last+1]
	// The numbers, unwrapped from the first (they wrap from 65535 to 1),
	// make a run with no hole once sorted: a wakeup on another CPU racing
	// the task's own event can swap two, or give two one number.
	nums := make([]int64, 0, len(own))
	prev, u := own[0].Own, int64(0)
	running := false // between a switch in and its switch out
	for i := range own {
		e := &own[i]
		if e.Type == evSwitch && e.A == tid {
			running = false
		}
		if !numberedFor(e, tid) {
			continue
		}
		if e.Type == evSwitch {
			if running {
				return 0, false // the switch out in between is lost
			}
			running = true
		}
		d := (int64(e.Own) - int64(prev)) % 65535
		if d > 32767 {
			d -= 65535
		} else if d < -32767 {
			d += 65535
		}
		u, prev = u+d, e.Own
		nums = append(nums, u)
	}
	slices.Sort(nums)
	for i := 1; i < len(nums); i++ {
		if nums[i]-nums[i-1] > 1 {
			return 0, false
		}
	}
	return own[0].Ts, true
}

// numberedFor tells whether e carries tid's own number: a switch to tid,
// or another of its events BPF numbered (0: none, the engine numbers no
// event, or tid was not tracked).
func numberedFor(e *raw, tid uint32) bool {
	return e.Own != 0 && (e.Type != evSwitch || e.B == tid)
}

// keptEvents returns tid's own events kept, in no order.
func (o *ownLog) keptEvents(tid uint32) []raw {
	if t := o.tasks[tid]; t != nil {
		return t.evs
	}
	return nil
}

// events returns tid's own events on cpu in [from, to), oldest first.
func (o *ownLog) events(tid uint32, cpu int, from, to uint64) []raw {
	t := o.tasks[tid]
	if t == nil {
		return nil
	}
	var out []raw
	for i := range t.evs {
		r := t.evs[(t.start+i)%len(t.evs)]
		if int(r.Cpu) == cpu && r.Ts >= from && r.Ts < to {
			out = append(out, r)
		}
	}
	return out
}

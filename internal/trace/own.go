package trace

import (
	"math"
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
// them. It is whole only while the snapshot is brought up to date before
// the rings wrap (a TakeInto every poll): a gap in the copy is remembered
// (since).
type ownLog struct {
	tasks map[uint32]*ownRing
	bits  []uint64 // the tids of tasks, a bit each: most events name none
	fed   []uint64 // per CPU: the events below this sequence number were fed
	// since is, per CPU, the time from which the copy has no gap: 0 while
	// it holds every event since the recorder started, math.MaxUint64
	// after a gap until an event is copied.
	since []uint64
	last  uint64 // the latest event time fed
}

// ownRing is one task's own events, oldest first from start.
type ownRing struct {
	evs   []raw
	start int
	// from: every event of the task after this time is kept (KeepOwn);
	// evicted: the newest event dropped for room.
	from, evicted uint64
}

func (o *ownLog) resize(ncpu int) {
	o.fed = make([]uint64, ncpu)
	o.since = make([]uint64, ncpu)
}

func (o *ownLog) kept(tid uint32) bool {
	i := int(tid / 64)
	return i < len(o.bits) && o.bits[i]&(1<<(tid%64)) != 0
}

// KeepOwn starts keeping tid's own events beyond the rings' reach, those
// copied from now on: its windows that open from now on are whole while
// every Take comes before the rings wrap. Copying them costs 30-40 ns an
// event naming a kept task (BenchmarkPollSnapshot): a session keeps the
// tasks whose windows outlast the rings (periodic ones), not busy tasks
// whose windows are short.
func (sn *Snapshot) KeepOwn(tid uint32) {
	o := &sn.own
	if o.tasks == nil {
		o.tasks = map[uint32]*ownRing{}
	}
	if _, ok := o.tasks[tid]; ok {
		return
	}
	o.tasks[tid] = &ownRing{from: o.last}
	for int(tid/64) >= len(o.bits) {
		o.bits = append(o.bits, 0)
	}
	o.bits[tid/64] |= 1 << (tid % 64)
}

// ForgetOwn drops tid's own events (it exited, or is no longer watched).
func (sn *Snapshot) ForgetOwn(tid uint32) {
	o := &sn.own
	if _, ok := o.tasks[tid]; !ok {
		return
	}
	delete(o.tasks, tid)
	o.bits[tid/64] &^= 1 << (tid % 64)
}

// feed adds the events evs of cpu, whose sequence numbers are at least
// fed, to the kept tasks they name; gap: events of the CPU were lost
// before them.
func (o *ownLog) feed(cpu int, evs []raw, gap bool) {
	if gap {
		o.since[cpu] = math.MaxUint64
	}
	if len(evs) == 0 {
		return
	}
	if o.since[cpu] == math.MaxUint64 {
		o.since[cpu] = evs[0].Ts
	}
	o.last = max(o.last, evs[len(evs)-1].Ts)
	if len(o.tasks) == 0 {
		return
	}
	for i := range evs {
		r := &evs[i]
		switch r.Type {
		case evSteal, evStack:
			continue // kept as context: they name no task of their own
		case evSwitch:
			if r.B != r.A && o.kept(r.B) {
				o.add(r.B, r)
			}
		}
		if o.kept(r.A) && mentions(r.Event, r.A) {
			o.add(r.A, r)
		}
	}
}

func (o *ownLog) add(tid uint32, r *raw) {
	t := o.tasks[tid]
	if len(t.evs) < OwnPerTask {
		t.evs = append(t.evs, *r)
		return
	}
	t.evicted = max(t.evicted, t.evs[t.start].Ts)
	t.evs[t.start] = *r
	t.start = (t.start + 1) % len(t.evs)
}

// covers tells whether every event of tid from start on was kept.
func (o *ownLog) covers(tid uint32, start uint64) bool {
	t := o.tasks[tid]
	if t == nil || t.from >= start || (t.evicted != 0 && t.evicted >= start) {
		return false
	}
	for _, s := range o.since {
		if s > start {
			return false
		}
	}
	return true
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

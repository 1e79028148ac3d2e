package engine

import (
	"errors"
	"os"
	"slices"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

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

// RecordedPolicy returns the scheduling policy the engine last saw for
// tracking id: its statistics outlive an exited task until they are read.
// One map lookup, no notices taken; safe for concurrent use.
func (e *Engine) RecordedPolicy(id uint64) (uint32, error) {
	var k bpfRtsTaskStats
	if err := e.lookupStats(id, &k); err != nil {
		return 0, err
	}
	return k.Policy, nil
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
		case n.Type == NoticeTaskStart:
			e.back.taskStarted(e, n.Id, n.Tid)
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
func (e *Engine) BTFOptions() ebpf.CollectionOptions { return e.loadOptions() }

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

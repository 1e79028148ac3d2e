package trace

import (
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// ringSource is a flight recorder laid out as the kernel's (one array of
// per slots a CPU, a sequence number per CPU), for benchmarks: writing and
// reading cost what they cost on the mmapped map.
type ringSource struct {
	per   uint32
	slots []engine.Event
	heads []uint64
	ts    uint64
	// own: the tasks whose events putEv numbers as BPF does (Event.Own),
	// with their last number
	own map[uint32]uint16
}

func newRingSource(ncpu int, per uint32) *ringSource {
	return &ringSource{per: per, slots: make([]engine.Event, ncpu*int(per)), heads: make([]uint64, ncpu)}
}

func (r *ringSource) NumCPU() int              { return len(r.heads) }
func (r *ringSource) FlightPerCPU() uint32     { return r.per }
func (r *ringSource) Heads() ([]uint64, error) { return append([]uint64(nil), r.heads...), nil }
func (r *ringSource) FlightRing(cpu int) []engine.Event {
	return r.slots[uint32(cpu)*r.per : uint32(cpu+1)*r.per]
}

// write adds n switches per CPU between tasks of tids 1000..1000+tasks,
// 1 us apart.
func (r *ringSource) write(n, tasks int) {
	for i := 0; i < n; i++ {
		r.ts += 1000
		for cpu := range r.heads {
			seq := r.heads[cpu]
			e := &r.slots[uint32(cpu)*r.per+uint32(seq)&(r.per-1)]
			*e = engine.Event{Ts: r.ts, Seq: uint32(seq), Cpu: uint16(cpu), Type: evSwitch,
				A: uint32(1000 + (i+cpu)%tasks), B: uint32(1000 + (i+cpu+1)%tasks)}
			copy(e.Comm[:], []int8{'s', 't', 'r', 'e', 's', 's'})
			r.heads[cpu]++
		}
	}
}

// BenchmarkPollSnapshot is one poll of a watch that cuts a window: the
// rings copied, names learnt, a window of the last 200 us cut. Between
// polls each CPU writes 2000 events (200,000 a second and 10 ms polls: the
// load of the scaling bench), a quarter of its 8192-event ring.
func BenchmarkPollSnapshot(b *testing.B) {
	b.Run("cut", benchPoll)
	// A window longer than the rings (a period of a second under load):
	// all of both rings, trimmed to the default 1024 events.
	b.Run("cut-long", func(b *testing.B) {
		src := newRingSource(2, engine.DefaultFlightPerCPU)
		src.write(engine.DefaultFlightPerCPU, 100)
		names := NewNames(nil, nil)
		sn, err := TakeInto(src, nil)
		if err != nil {
			b.Fatal(err)
		}
		sn.Learn(names)
		b.ReportAllocs()
		for b.Loop() {
			sn.Cut(Window{Metric: "period", TID: 1001, Start: 0, End: src.ts, MaxEvents: 1024}, names)
		}
	})
	// The poll of a session keeping periodic tasks' own events: every
	// event read in place (Follow), those of 10 of the 100 tasks kept.
	b.Run("follow", func(b *testing.B) {
		src := newRingSource(2, engine.DefaultFlightPerCPU)
		src.write(engine.DefaultFlightPerCPU, 100)
		sn := new(Snapshot)
		for tid := uint32(1000); tid < 1100; tid += 10 {
			sn.KeepOwn(tid)
		}
		b.ReportAllocs()
		for b.Loop() {
			src.write(2000, 100)
			if err := sn.Follow(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Writing the events alone, to subtract.
	b.Run("write", func(b *testing.B) {
		src := newRingSource(2, engine.DefaultFlightPerCPU)
		for b.Loop() {
			src.write(2000, 100)
		}
	})
}

func benchPoll(b *testing.B) {
	src := newRingSource(2, engine.DefaultFlightPerCPU)
	src.write(engine.DefaultFlightPerCPU, 100)
	names := NewNames(nil, nil)
	var sn *Snapshot
	b.ReportAllocs()
	for b.Loop() {
		src.write(2000, 100)
		var err error
		if sn, err = TakeInto(src, sn); err != nil {
			b.Fatal(err)
		}
		sn.Learn(names)
		end := src.ts
		sn.Cut(Window{Metric: "latency", TID: 1001, Start: end - 200_000, End: end, MaxEvents: 1024}, names)
	}
}

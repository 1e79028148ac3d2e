package engine

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ring returns a ring of n slots with the events of sequence numbers
// [from, to) written as rts_flight writes them, minus those in holes
// (reserved, not written yet).
func ring(n int, from, to uint64, holes ...uint64) []Event {
	r := make([]Event, n)
	skip := map[uint64]bool{}
	for _, h := range holes {
		skip[h] = true
	}
	for seq := from; seq < to; seq++ {
		if skip[seq] {
			continue
		}
		e := &r[seq&uint64(n-1)]
		e.Seq, e.Type, e.Ts = uint32(seq), 1, seq*100
	}
	return r
}

func TestRingHead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ring     []Event
		last     uint64
		want     uint64
		lappedOK bool // want ok == false
	}{
		{"empty", ring(64, 0, 0), 0, 0, false},
		{"first events", ring(64, 0, 5), 0, 5, false},
		{"from the last head", ring(64, 0, 40), 30, 40, false},
		{"full lap not yet overwritten", ring(64, 0, 64), 10, 64, false},
		{"second lap", ring(64, 0, 100), 60, 100, false},
		{"nothing new", ring(64, 0, 100), 100, 100, false},
		// A program an interrupt nested into reserved 97 and has not
		// written it: the nested one's 98 and 99 are in.
		{"nested reservation", ring(64, 0, 100, 97), 60, 100, false},
		{"reserved at the end", ring(64, 0, 100, 99), 60, 99, false},
		{"reserved, none after", ring(64, 0, 100, 98, 99), 60, 98, false},
		// Overwritten since the last head: the caller reads the state.
		{"lapped", ring(64, 0, 200), 60, 0, true},
		// Sequence numbers in the events are 32-bit.
		{"32-bit wrap", ring(64, 1<<32-10, 1<<32+20), 1<<32 - 5, 1<<32 + 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ringHead(tc.ring, tc.last)
			if ok == tc.lappedOK {
				t.Fatalf("ok %v, want %v", ok, !tc.lappedOK)
			}
			if ok && got != tc.want {
				t.Errorf("head %d, want %d", got, tc.want)
			}
		})
	}
}

// Heads from the mapped rings agree with the per-CPU state BPF reserves
// sequence numbers in, on a live engine: between a reading of the state
// before and one after, on every CPU.
func TestHeadsMatchCPUState(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	const slots = 64
	e, err := Load(Config{Trace: true, FlightPerCPU: slots})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Attach(); err != nil {
		t.Fatal(err)
	}
	state := func() []uint64 {
		var per []bpfRtsCpuState
		if err := e.objs.Cpus.Lookup(uint32(0), &per); err != nil {
			t.Fatal(err)
		}
		out := make([]uint64, len(per))
		for i, c := range per {
			out[i] = c.Seq
		}
		return out
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	var prev []uint64
	laps, follows := 0, 0
	for round := range 50 {
		if round%5 == 0 {
			// Many switches on every CPU: the 64-slot rings wrap
			// between two readings (the lapped path).
			for cpu := range e.NumCPU() {
				if allowed.IsSet(cpu) {
					if err := switchOn(cpu); err != nil {
						t.Fatalf("CPU %d: %v", cpu, err)
					}
				}
			}
			for range 100 {
				time.Sleep(20 * time.Microsecond)
			}
		}
		time.Sleep(20 * time.Microsecond) // a few events: the ring followed
		before := state()
		heads, err := e.Heads()
		if err != nil {
			t.Fatal(err)
		}
		after := state()
		for cpu := range heads {
			if cpu >= len(before) {
				break
			}
			// Slots reserved before the first reading are written by
			// the time the rings are read, but one nested program may
			// still hold its slot.
			if heads[cpu]+nestGap < before[cpu] || heads[cpu] > after[cpu] {
				t.Errorf("round %d CPU %d: head %d, state %d before and %d after", round, cpu, heads[cpu], before[cpu], after[cpu])
			}
			switch {
			case prev == nil:
			case before[cpu] > prev[cpu]+slots:
				laps++
			case heads[cpu] > prev[cpu]:
				follows++
			}
		}
		prev = heads
	}
	if laps == 0 || follows == 0 {
		t.Fatalf("%d readings after a lap, %d following the ring: want both", laps, follows)
	}
	t.Logf("%d readings after a lap, %d following the ring", laps, follows)
}

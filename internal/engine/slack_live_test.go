package engine

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

// TestLiveTimerSlack: on this kernel, both engines carry each tracked
// sleeper timer's granted slack in its arming and in its callback's entry:
// a SCHED_OTHER thread's poll() with a 200 ms timeout gets 0.1% of the
// time left (just under 200 us; at least its 50 us timer slack), a FIFO
// thread's none.
func TestLiveTimerSlack(t *testing.T) {
	cpus, err := workload.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{EngineBTF, EngineClassic} {
		t.Run(kind, func(t *testing.T) {
			// 12 MiB a CPU: other tests' (and sessions') switch storms
			// must not lap the polls' events in 1.2 s.
			const per = 1 << 18
			e := liveEngine(t, Config{Trace: true, FlightPerCPU: per, Engine: kind})
			var g workload.Group
			defer g.Stop(3 * time.Second)
			want := map[uint32][2]uint64{} // tid -> slack range
			for _, c := range []struct {
				policy   workload.Policy
				min, max uint64
			}{{workload.Other, 150_000, 200_000}, {workload.FIFO, 0, 0}} {
				th, err := g.Go(workload.Spec{Name: "rts-slack", CPU: cpus[len(cpus)-1], Policy: c.policy, Priority: 10},
					func(t *workload.Thread) {
						t.Sleep(300 * time.Millisecond) // tracked meanwhile
						for range 3 {
							unix.Poll(nil, 200) //nolint:errcheck // nothing to read: each poll ends by its timer
						}
					})
				if err != nil {
					t.Fatal(err)
				}
				want[uint32(th.Tid)] = [2]uint64{c.min, c.max}
				if err := e.WantTID(uint32(th.Tid), 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Scan(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1200 * time.Millisecond)
			checkLiveSlack(t, e, per, want)
		})
	}
}

// checkLiveSlack finds each tracked thread's armings and the entries of
// their callbacks (the same expiry) in the rings, and checks their slack.
func checkLiveSlack(t *testing.T, e *Engine, per uint64, want map[uint32][2]uint64) {
	t.Helper()
	heads, err := e.Heads()
	if err != nil {
		t.Fatal(err)
	}
	armedBy := map[uint64]uint32{} // expiry -> tid
	var entries []Event
	for cpu, head := range heads {
		ring := e.FlightRing(cpu)
		for seq := head - min(head, per); seq < head; seq++ { // the ring's last per events
			ev := ring[seq%per]
			switch {
			case ev.Seq != uint32(seq):
			case ev.Type == EventTimerArm && hasTID(want, ev.A):
				armedBy[EventX(&ev)] = ev.A
				checkSlack(t, "arming", &ev, want[ev.A])
			case ev.Type == EventTimerEntry:
				entries = append(entries, ev)
			}
		}
	}
	seen := map[uint32]int{}
	for i := range entries {
		if tid, ok := armedBy[EventY(&entries[i])]; ok {
			seen[tid]++
			checkSlack(t, "callback entry", &entries[i], want[tid])
		}
	}
	for tid := range want {
		if seen[tid] == 0 {
			t.Errorf("thread %d: no callback entry of its armings, want its 3 polls' (armings seen: %d)", tid, len(armedBy))
		}
	}
}

func hasTID(want map[uint32][2]uint64, tid uint32) bool {
	_, ok := want[tid]
	return ok
}

func checkSlack(t *testing.T, what string, ev *Event, r [2]uint64) {
	t.Helper()
	if ns, ok := EventSlack(ev); !ok || ns < r[0] || ns > r[1] {
		t.Errorf("%s: slack %d ns (known %v), want %d..%d", what, ns, ok, r[0], r[1])
	}
}

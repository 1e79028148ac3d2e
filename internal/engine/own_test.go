package engine

import (
	"cmp"
	"slices"
	"testing"

	"github.com/rtscope/rtscope/internal/target"
)

// TestLiveOwnNumbers: on this kernel, every event the engine writes of a
// tracked task's own (its switches in, wakeups, sleeps, migrations, its
// exit) carries the task's own number up to its exit, and the numbers
// leave no hole: trace/own.go tells by them whether a ring that lapped
// before it was read held any of the task's events. Both engines.
func TestLiveOwnNumbers(t *testing.T) {
	for _, kind := range []string{EngineBTF, EngineClassic} {
		t.Run(kind, func(t *testing.T) {
			const per = 1 << 15
			e := liveEngine(t, Config{Trace: true, FlightPerCPU: per, Engine: kind})
			l, err := target.Launch([]string{"sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 0.01; done"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tid := uint32(l.Pid)
			if err := e.WantTID(tid, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := e.Scan(); err != nil {
				t.Fatal(err)
			}
			if err := l.Resume(); err != nil {
				t.Fatal(err)
			}
			if err := l.Cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			heads, err := e.Heads()
			if err != nil {
				t.Fatal(err)
			}
			// The task's events, numbered or not: those before its first
			// numbered one came before it was tracked (launched stopped).
			type ownEv struct {
				ts       uint64
				cpu, own int
				typ      uint8
			}
			var evs []ownEv
			lapped := false
			for cpu, head := range heads {
				ring := e.FlightRing(cpu)
				lapped = lapped || head > per
				for seq := head - min(head, per); seq < head; seq++ {
					ev := ring[seq%per]
					if ev.Seq != uint32(seq) {
						continue
					}
					numbered := ev.B == tid
					switch ev.Type {
					case EventSwitch:
					case EventWakeup, EventMigrate, EventSleep, EventExit, EventTimerArm, EventUserReturn:
						numbered = ev.A == tid
					default:
						continue
					}
					if !numbered {
						continue
					}
					evs = append(evs, ownEv{ev.Ts, cpu, int(ev.Own), ev.Type})
				}
			}
			slices.SortFunc(evs, func(a, b ownEv) int { return cmp.Compare(a.ts, b.ts) })
			var nums []int
			types := map[uint8]int{}
			exited := false
			for _, ev := range evs {
				switch {
				case exited:
					// After sched_process_exit the task still runs do_exit()
					// and is switched in and out until its last schedule,
					// but it is no longer tracked (untracked at its exit):
					// 1 classic run in 4 had such a switch-in after it.
					continue
				case ev.typ == EventExit && ev.own != 0:
					exited = true
					nums = append(nums, ev.own)
					types[ev.typ]++
				case ev.own != 0:
					nums = append(nums, ev.own)
					types[ev.typ]++
				case len(nums) > 0:
					t.Errorf("CPU %d: an event (type %d) of the tracked task at %d has no own number", ev.cpu, ev.typ, ev.ts)
				}
			}
			slices.Sort(nums)
			if len(nums) < 20 || types[EventSwitch] == 0 || types[EventWakeup] == 0 || types[EventSleep] == 0 || types[EventExit] != 1 {
				t.Fatalf("%d numbered events of the task, by type %v: want its switches in, wakeups, sleeps and its exit", len(nums), types)
			}
			if !lapped && nums[0] != 1 {
				t.Errorf("its first number is %d, want 1", nums[0])
			}
			for i := 1; i < len(nums); i++ {
				if nums[i]-nums[i-1] > 1 {
					t.Fatalf("a hole in its numbers: %d then %d (of %v)", nums[i-1], nums[i], nums)
				}
			}
			t.Logf("%d events numbered 1 to %d, by type %v", len(nums), nums[len(nums)-1], types)
		})
	}
}

// TestTwinOwnSeq: own numbers count from 1 and wrap from 65535 to 1 (0
// means none).
func TestTwinOwnSeq(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	for i, want := range []uint32{1, 2, 3} {
		if got := tw.run(tw.objs.TestOwnSeq, 100, 0, 0); got != want {
			t.Errorf("number %d: %d, want %d", i, got, want)
		}
	}
	if got := tw.run(tw.objs.TestOwnSeq, 100, 1, 65534); got != 65535 {
		t.Errorf("after 65534: %d", got)
	}
	if got := tw.run(tw.objs.TestOwnSeq, 100, 0, 0); got != 1 {
		t.Errorf("after 65535: %d, want 1 (0 is none)", got)
	}
}

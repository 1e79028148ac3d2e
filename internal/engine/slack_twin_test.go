package engine

import (
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// slackUnknown is RTS_SLACK_UNKNOWN: the engine knows no slack.
const slackUnknown = ^uint64(0)

// A sleeper timer's arming carries the slack the kernel granted it (hard
// minus soft expiry) in its event, flagged; an arming whose slack is not
// known carries none, and a slack of 0 (a real-time task's) is known.
func TestTwinTimerArmSlack(t *testing.T) {
	const slots = 64
	objs := twinFlight(t, slots, nil)
	if ret := onCPU0(t, objs.TestTrack, 100, 100, 0, 0); ret != 0 {
		t.Fatalf("track: %d", int32(ret))
	}
	arms := []struct{ now, expiry, slack uint64 }{
		{1_000, 10_000_000_000, 10_000_000}, // poll(10 s): 0.1% of it
		{2_000, 20_000_000_000, 0},          // a real-time task's: none
		{3_000, 30_000_000_000, slackUnknown},
	}
	for _, a := range arms {
		onCPU0(t, objs.TestTimerArm, a.now, 0, 100, a.expiry, a.expiry, a.slack)
	}
	got := flightEvents(t, objs, slots, EventTimerArm)
	if len(got) != len(arms) {
		t.Fatalf("%d timer_arm events, want %d", len(got), len(arms))
	}
	for i, a := range arms {
		ns, ok := EventSlack(&got[i])
		wantOK := a.slack != slackUnknown
		if ok != wantOK || (ok && ns != a.slack) || EventX(&got[i]) != a.expiry || got[i].Flags&1 != 0 {
			t.Errorf("arming %d: slack %d known %v, expiry %d, flags %#x; want %d known %v, expiry %d, not missed",
				i, ns, ok, EventX(&got[i]), got[i].Flags, a.slack, wantOK, a.expiry)
		}
	}
}

// The classic engine reads the hard expiry (`expires`) of hrtimer_start's
// record beside the soft one, keeps the slack with the timer until its
// callback, and puts it in both events; without the field (an older
// format) neither carries one.
func TestClassicTwinTimerSlack(t *testing.T) {
	// hrtimer_start is the current task's: this thread, tracked, and on
	// the twin's CPU (a test run on another CPU runs in its IPI, where
	// current is whatever ran there).
	onTwinCPU(t)
	tid := uint32(unix.Gettid())
	const fn, timer, soft, slack = 0xfeed0, 0x7000, 5_000_000_000, 10_000_000
	for _, hard := range []bool{true, false} {
		tw := newClassicTwinWith(t, map[string]any{"hrtimer_wakeup_fn": uint64(fn), "flight_per_cpu": uint32(64)},
			func(spec *ebpf.CollectionSpec, offs map[string]uint32) {
				spec.Maps["flight"].MaxEntries = 64
				if !hard {
					delete(offs, "off_hrstart_expires")
				}
			})
		if err := tw.objs.WantTid.Put(tid, bpfRtsTarget{Index: 7}); err != nil {
			t.Fatal(err)
		}
		tw.scan(tid, 7, false, "poller")
		start := []field{{off: "off_hrstart_hrtimer", size: 8, val: timer},
			{off: "off_hrstart_function", size: 8, val: fn}, {off: "off_hrstart_softexpires", size: 8, val: soft}}
		if hard {
			start = append(start, field{off: "off_hrstart_expires", size: 8, val: soft + slack})
		}
		tw.record(twinHrtimerStart, start...)
		tw.record(twinTimerEntry, field{off: "off_hrentry_function", size: 8, val: fn},
			field{off: "off_hrentry_hrtimer", size: 8, val: timer}, field{off: "off_hrentry_now", size: 8, val: soft + slack})
		for _, typ := range []uint8{EventTimerArm, EventTimerEntry} {
			evs := tw.flight(typ)
			if len(evs) != 1 {
				t.Fatalf("hard expiry field %v: %d events of type %d, want 1", hard, len(evs), typ)
			}
			ns, ok := EventSlack(&evs[0])
			if ok != hard || (hard && ns != slack) {
				t.Errorf("hard expiry field %v, event type %d: slack %d known %v; want %d known %v", hard, typ, ns, ok, slack, hard)
			}
		}
	}
}

// flight returns the classic twin's events of type typ (64 slots of CPU 0).
func (tw *classicTwin) flight(typ uint8) []Event {
	tw.t.Helper()
	var got []Event
	for i := uint32(0); i < 64; i++ {
		var e Event
		if err := tw.objs.Flight.Lookup(i, &e); err != nil {
			tw.t.Fatal(err)
		}
		if e.Type == typ {
			got = append(got, e)
		}
	}
	return got
}

package isolation

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// timerRun is what one watch of CPU 1 saw of the timerfd pair.
type timerRun struct {
	snap         *Snapshot
	settimes     uint64 // the armer's timerfd_settime calls while attached
	armerLocal   uint64 // its armings of timerfd_tmrproc counted on CPU 1 from CPU 1
	remote, mine uint64 // remote armings of timerfd_tmrproc onto CPU 1: all, and the spinner's
	expired      uint64 // CPU 1's timerfd_tmrproc expiries
}

func watchTimers(t *testing.T, armer, spinner uint32, settimes *atomic.Uint64) timerRun {
	t.Helper()
	var r timerRun
	var before uint64
	snap, err := Collect(context.Background(), Options{CPUs: []int{1}, Duration: 3 * time.Second, OwnIPIs: true,
		Ready: func() { before = settimes.Load() }, Ending: func() { r.settimes = settimes.Load() - before }})
	if err != nil {
		t.Fatal(err)
	}
	r.snap = snap
	for _, a := range snap.TimerArms {
		if a.CPU != 1 || a.Func != "timerfd_tmrproc" {
			continue
		}
		switch {
		case a.FromCPU == 1 && a.TID == armer:
			r.armerLocal += a.Count
		case a.FromCPU != 1:
			r.remote += a.Count
			if a.TID == spinner {
				r.mine += a.Count
			}
		}
	}
	for _, e := range snap.Timers {
		if e.CPU == 1 && e.Func == "timerfd_tmrproc" {
			r.expired += e.Count
		}
	}
	return r
}

// An interval timerfd armed by a thread on CPU 1 (every ms) fires there;
// a thread on CPU 0 reads it without blocking, and each read that
// consumes an expiry re-arms the timer from CPU 0. An hrtimer whose
// callback is still running cannot change CPU, so the re-arms that land
// in that window leave the timer on CPU 1: timers armed on CPU 1 by a task
// of CPU 0 (measured here: 603 of 14260 re-arms in 5 s). Asserted over
// many events: 90% of the armer's timerfd_settime calls counted as local
// armings, 90% at least of the remote armings of timerfd_tmrproc onto
// CPU 1 attributed to the reader, 100 at least, and the report's row
// naming it with the remote remedy.
func TestLiveRemoteTimer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF programs (CI runs as root)")
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var stop atomic.Bool
	defer stop.Store(true)
	var settimes, reads atomic.Uint64
	every := unix.NsecToTimespec(int64(100 * time.Microsecond))
	spec := unix.ItimerSpec{Interval: every, Value: every}
	armer := pinned(t, 1, &stop, func() {
		if unix.TimerfdSettime(fd, 0, &spec, nil) == nil {
			settimes.Add(1)
		}
		time.Sleep(time.Millisecond)
	})
	buf := make([]byte, 8)
	spinner := pinned(t, 0, &stop, func() {
		if n, _ := unix.Read(fd, buf); n == 8 {
			reads.Add(1)
		}
	})
	var r timerRun
	for attempt := 1; ; attempt++ {
		r = watchTimers(t, armer, spinner, &settimes)
		t.Logf("CPU 1: armer %d settime calls, %d local armings; %d remote armings of timerfd_tmrproc, %d by the reader on CPU 0 (%d reads in all); %d expiries",
			r.settimes, r.armerLocal, r.remote, r.mine, reads.Load(), r.expired)
		if r.remote < 100 && attempt == 1 {
			continue // the machine's other load kept the pair from racing often enough
		}
		break
	}
	stop.Store(true)
	if r.settimes < 1000 || r.armerLocal*10 < r.settimes*9 {
		t.Errorf("%d local armings counted of the armer's %d timerfd_settime calls; want 90%% of 1000 at least", r.armerLocal, r.settimes)
	}
	if r.remote < 100 || r.mine*10 < r.remote*9 {
		t.Errorf("%d of %d remote armings of timerfd_tmrproc onto CPU 1 attributed to the reader; want 90%% of 100 at least", r.mine, r.remote)
	}
	checkTimerRow(t, Analyze(r.snap), spinner)
}

// checkTimerRow: CPU 1's timerfd_tmrproc intrusion names the reader as a
// sender on CPU 0, with the remote remedy.
func checkTimerRow(t *testing.T, res *Result, spinner uint32) {
	t.Helper()
	for _, c := range res.CPUs {
		for _, in := range c.Intrusions {
			if in.Cause != CauseTimer || in.What != "hrtimer timerfd_tmrproc" {
				continue
			}
			tid := "/" + strconv.Itoa(int(spinner)) + " on CPU 0"
			if !strings.HasPrefix(in.Sender, "isolation.test") || !strings.Contains(in.Sender, tid) || !strings.Contains(in.Remedy, "from CPU 0") {
				t.Errorf("timerfd_tmrproc row: sender %q, remedy %q; want the reader (%s) first and the remote remedy", in.Sender, in.Remedy, tid)
			}
			return
		}
	}
	t.Errorf("no timerfd_tmrproc intrusion on CPU 1: %+v", res.CPUs)
}

package engine

// Twins of the period detector (rts_period_seen), the start-up and the
// overrun count: a task is periodic only when its releases are regular,
// its nominal period converges on the true one, and its overruns never
// exceed its iterations.

import (
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/metric"
)

// audioPeriod is 256 frames at 48 kHz: 5.333333 ms, where the smallest
// spacing seen twice said 5297.6 us on a real audio server.
const audioPeriod = 256e9 / 48000

// within says whether got is within 0.1% of want.
func within(got uint64, want float64) bool {
	d := float64(got) - want
	return d <= want/1000 && d >= -want/1000
}

// A timer-released loop (timerfd) whose expiries jitter by up to ±50 us
// around a 5.333333 ms grid, with a release 3 ms late every 50th: its
// nominal period is within 0.1% of the true one.
func TestTwinPeriodExact(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	rng := rand.New(rand.NewPCG(1, 2))
	const base = 1_000_000_000
	for k := range 2000 {
		e := uint64(base + float64(k)*audioPeriod + (rng.Float64()*2-1)*50_000)
		if k%50 == 25 {
			e += 3_000_000
		}
		tw.release(100, e, 1_000_000)
	}
	s := tw.stats(100)
	t.Logf("jittered timer releases: nominal period %d ns, true %.1f", s.NominalPeriod, audioPeriod)
	if !within(s.NominalPeriod, audioPeriod) {
		t.Errorf("nominal period %d, want %.0f within 0.1%%", s.NominalPeriod, audioPeriod)
	}
	if s.Overruns != 0 {
		t.Errorf("overruns %d, want none: every cycle took 1 ms", s.Overruns)
	}

	// An absolute-time loop arming deadlines on the exact grid (rounded to ns).
	tw.track(200, false, false)
	for k := range 500 {
		d := uint64(base + float64(k+1)*audioPeriod)
		tw.arm(d-2_000_000, 0, 200, d, d)
	}
	if s := tw.stats(200); !within(s.NominalPeriod, audioPeriod) || s.Overruns != 0 {
		t.Errorf("armed loop: nominal period %d overruns %d, want %.0f within 0.1%% and none", s.NominalPeriod, s.Overruns, audioPeriod)
	}
}

// An event-driven task released at random (exponential gaps, mean 5 ms,
// both by its own timed waits and by a timer) gets no period and no
// overruns, however long it runs; its start-up ends anyway.
func TestTwinEventDrivenNoPeriod(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	tw.track(200, false, false)
	rng := rand.New(rand.NewPCG(3, 4))
	gap := func() uint64 { return uint64(rng.ExpFloat64()*5e6) + 1000 }
	e := uint64(1_000_000_000)
	for range 3000 {
		e += gap()
		tw.release(100, e, 200_000)
	}
	now := uint64(1_000_000_000)
	for range 3000 {
		now += gap()
		tw.arm(now, 0, 200, now+500_000, now+500_000) // a timed wait of 0.5 ms
	}
	for _, tid := range []uint32{100, 200} {
		s := tw.stats(tid)
		if s.NominalPeriod != 0 || s.Overruns != 0 {
			t.Errorf("tid %d: nominal period %d, %d overruns: want neither", tid, s.NominalPeriod, s.Overruns)
		}
		if s.StartupUs == 0 || s.StartupIterations == 0 || s.StartupIterations > 16 {
			t.Errorf("tid %d: start-up of %d iterations, over: %v, want it over within 16", tid, s.StartupIterations, s.StartupUs != 0)
		}
	}
}

// A periodic loop that turns event-driven loses its period after 8
// irregular spacings in a row, and counts no overrun from then on.
func TestTwinPeriodLost(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	now := uint64(1_000_000)
	for range 10 {
		now += 1_000_000
		tw.arm(now, 0, 100, now+500_000, now+500_000)
	}
	if s := tw.stats(100); s.NominalPeriod != 1_000_000 {
		t.Fatalf("nominal period %d, want 1000000", s.NominalPeriod)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 20 {
		now += 3_000_000 + uint64(rng.IntN(7))*1_100_000 + uint64(i)*7_000
		tw.arm(now, 0, 100, now+500_000, now+500_000)
	}
	s := tw.stats(100)
	if s.NominalPeriod != 0 {
		t.Errorf("nominal period %d after 20 irregular spacings, want none", s.NominalPeriod)
	}
	if s.Overruns > 7 {
		t.Errorf("%d overruns: at most the 7 irregular iterations before the period was lost", s.Overruns)
	}
}

// Overruns never exceed iterations: a Go runtime thread's relative sleeps
// (20 us doubling to 10 ms and back: once a 77.7 us "period" and 24764864
// overruns in 3383 iterations) and a loop that overruns at random.
func TestTwinOverrunsNeverExceedIterations(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	tw.track(200, false, false)
	rng := rand.New(rand.NewPCG(7, 8))
	now, sleep := uint64(1_000_000), uint64(20_000)
	for range 5000 {
		now += sleep + 57_000
		tw.arm(now, 0, 100, now+sleep, now+sleep)
		if rng.IntN(10) == 0 {
			sleep = 20_000
		} else if sleep < 10_000_000 {
			sleep *= 2
		}
	}
	const p = 1_000_000
	now, d := uint64(1_000_000), uint64(2_000_000)
	for range 5000 {
		work := uint64(rng.IntN(p / 2))
		if rng.IntN(8) == 0 {
			work = uint64(rng.IntN(4 * p)) // late: armed past, or skipping
		}
		now += work
		for d <= now && rng.IntN(2) == 0 {
			d += p // catching up by skipping
		}
		tw.arm(now, 0, 200, d, d)
		if d > now {
			now = d
		}
		d += p
	}
	for _, tid := range []uint32{100, 200} {
		s := tw.stats(tid)
		if it := s.M[metric.Iteration].Count; s.Overruns > it {
			t.Errorf("tid %d: %d overruns in %d iterations", tid, s.Overruns, it)
		}
	}
	if s := tw.stats(200); s.NominalPeriod != p || s.Overruns == 0 {
		t.Errorf("overrunning loop: nominal period %d, %d overruns, want %d and some", s.NominalPeriod, s.Overruns, p)
	}
}

// monotonic is CLOCK_MONOTONIC now, the clock of bpf_ktime_get_ns.
func monotonic(t *testing.T) uint64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// --warm-up 50ms: every sample ending in a task's first 50 ms after its
// tracking is left out (latency and response too), and the start-up
// ends there; the loop's samples count from then, period or not.
func TestTwinWarmUp(t *testing.T) {
	tw := newTwinWith(t, nil, map[string]any{"warm_up_ns": uint64(50 * time.Millisecond)})
	tw.track(100, true, false)
	base := monotonic(t)
	for k := uint64(0); k < 20; k++ {
		tw.release(100, base+k*10_000_000, 1_000_000) // 10 ms period: 5 releases in the warm-up
	}
	s := tw.stats(100)
	if s.StartupUs != 50_000 {
		t.Errorf("start-up of %d us, want the 50 ms warm-up", s.StartupUs)
	}
	r := s.M[metric.Response].Count
	if r < 14 || r > 15 {
		t.Errorf("%d responses counted, want the 14 or 15 after the warm-up", r)
	}
	if c := s.M[metric.Cycle].Count; c+uint64(s.StartupIterations) != 19 || c < 13 {
		t.Errorf("%d cycles counted and %d in the start-up, want 19 in all, 13 or more after it", c, s.StartupIterations)
	}
}

// The wall time a task held each identity: closed at each change (ms),
// the current one open from its change to its last switch-out.
func TestTwinSchedTime(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(400, false, false)
	tw.switchTo(1, 0, idle, 400, false, 0)
	seen := func(policy uint64, prio int) {
		tw.run(tw.objs.TestSched, 400, policy, uint64(int64(prio)))
	}
	const other, fifo = 0, 1
	seen(other, 120)
	time.Sleep(20 * time.Millisecond)
	seen(fifo, 19) // FIFO 80
	time.Sleep(30 * time.Millisecond)
	seen(other, 120) // back: its time adds up
	time.Sleep(10 * time.Millisecond)
	tw.switchTo(monotonic(t), 0, 400, idle, true, 0)
	s := tw.stats(400)
	if s.SchedCur != 0 {
		t.Errorf("current identity %d, want 0 (OTHER again)", s.SchedCur)
	}
	if s.SchedMs[0] < 20 || s.SchedMs[1] < 30 || s.SchedMs[0] > s.SchedMs[1] {
		t.Errorf("ms per identity %v, want at least 20 and 30, OTHER's shorter", s.SchedMs)
	}
	if s.SchedOpenNs < uint64(10*time.Millisecond) || s.SchedOpenNs > uint64(time.Second) {
		t.Errorf("current identity held %d ns at its last switch-out, want 10 ms or more", s.SchedOpenNs)
	}
}

// A 5 ms loop that blocks on a semaphore posted every 7 ms skips every
// other deadline or so from its start (spacings 5, 10, 5, 10, 5, 5, 10 ms):
// periodic at 5 ms, each skip an overrun.
func TestTwinSkipsFromTheStart(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, false, false)
	const p = 5_000_000
	d, skips := uint64(1_000_000_000), 0
	pattern := []uint64{1, 2, 1, 2, 1, 1, 2}
	for i := range 70 {
		k := pattern[i%len(pattern)]
		d += k * p
		tw.arm(d-1_000_000, 0, 100, d, d)
		if k == 2 && i >= 12 {
			skips++
		}
	}
	s := tw.stats(100)
	if s.NominalPeriod != p {
		t.Fatalf("nominal period %d, want %d", s.NominalPeriod, p)
	}
	// The skips after its start-up (settled by the 12th arming at the latest).
	if s.Overruns < uint64(skips) || s.Overruns > uint64(skips)+3 {
		t.Errorf("%d overruns, want %d or a few more (those of its early iterations)", s.Overruns, skips)
	}
}

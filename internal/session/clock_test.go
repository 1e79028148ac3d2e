package session

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestClockTicksAndStops checks that the timerfd clock ticks, drops the
// ticks nobody read instead of queueing them, and leaves neither its fd
// nor its goroutine behind once stopped. No timing is asserted beyond
// "ticks arrive": the machine may stall.
func TestClockTicksAndStops(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	fd0, g0 := fds(), runtime.NumGoroutine()
	c := newClock(time.Millisecond)
	if fds() != fd0+1 {
		t.Fatalf("no timerfd opened: %d fds, had %d", fds(), fd0)
	}
	start := time.Now()
	for range 20 {
		select {
		case <-c.C:
		case <-time.After(5 * time.Second):
			t.Fatal("no tick in 5 s from a 1 ms clock")
		}
	}
	if time.Since(start) < 19*time.Millisecond {
		t.Fatalf("20 ticks of 1 ms in %v: ticks are not paced", time.Since(start))
	}
	// A tick allocates nothing (the session's poll runs on it 100 times a
	// second): AllocsPerRun counts every goroutine's allocations.
	if a := testing.AllocsPerRun(20, func() { <-c.C }); a != 0 {
		t.Errorf("a tick allocates %v times", a)
	}
	// Unread ticks: at most the one the channel holds is waiting.
	time.Sleep(20 * time.Millisecond)
	held := 0
	for len(c.C) > 0 {
		<-c.C
		held++
	}
	if held > 1 {
		t.Fatalf("%d ticks queued: missed ticks must be dropped", held)
	}
	c.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for fds() != fd0 || runtime.NumGoroutine() > g0 {
		if time.Now().After(deadline) {
			t.Fatalf("after Stop: %d fds (had %d), %d goroutines (had %d)", fds(), fd0, runtime.NumGoroutine(), g0)
		}
		time.Sleep(time.Millisecond)
	}
}

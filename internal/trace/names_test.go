package trace

import (
	"fmt"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

func commOf(s string) (c [16]int8) {
	for i := 0; i < len(s) && i < 15; i++ {
		c[i] = int8(s[i])
	}
	return c
}

// TestNamesBoundedUnderChurn churns 100,000 tids (ten times pid_max here)
// through Names as the ring snapshots would: it remembers at most two
// generations, the latest tids keep their names, and a tid looked up again
// survives rotations. Before the bound it kept every tid ever seen.
func TestNamesBoundedUnderChurn(t *testing.T) {
	n := NewNames(nil, nil)
	// Tids above any pid_max: a forgotten one is not found in /proc either.
	const base, churn = 1 << 30, 100_000
	const keep = base - 1 // a long-lived task, seen again now and then
	n.SetComm(keep, "control")
	for i := uint32(0); i < churn; i++ {
		tid := base + i
		n.learnOnly(&engine.Event{Type: evSwitch, B: tid, Comm: commOf(fmt.Sprint("t", i))})
		if got := n.remembered(); got > 2*CommsPerGeneration {
			t.Fatalf("after %d tids Names remembers %d, want at most %d", i+1, got, 2*CommsPerGeneration)
		}
		if i%(CommsPerGeneration/2) == 0 && n.Comm(keep) != "control" {
			t.Fatalf("after %d tids the long-lived task's name is lost", i+1)
		}
	}
	if got := n.remembered(); got < CommsPerGeneration {
		t.Errorf("Names remembers %d tids, want at least the last %d", got, CommsPerGeneration)
	}
	for i := uint32(churn - CommsPerGeneration); i < churn; i++ {
		if got, want := n.Comm(base+i), fmt.Sprint("t", i); got != want {
			t.Fatalf("recent tid %d is %q, want %q", base+i, got, want)
		}
	}
	if got := n.Comm(base); got != "?" {
		t.Errorf("the first tid, long gone, is still named %q", got)
	}
	// A rename replaces the name in place.
	n.learnOnly(&engine.Event{Type: evSwitch, B: base + churn - 1, Comm: commOf("renamed")})
	if got := n.Comm(base + churn - 1); got != "renamed" {
		t.Errorf("renamed tid is %q, want renamed", got)
	}
}

// TestLearnCacheFollowsSetComm: the cache of comms learnt never hides a
// change made since: an event naming a tid as learnt before sets that name
// again after SetComm changed it.
func TestLearnCacheFollowsSetComm(t *testing.T) {
	n := NewNames(nil, nil)
	n.learnOnly(&engine.Event{Type: evSwitch, B: 7, Comm: commOf("a")})
	n.SetComm(7, "b")
	n.learnOnly(&engine.Event{Type: evSwitch, B: 7, Comm: commOf("a")})
	if got := n.Comm(7); got != "a" {
		t.Errorf("tid 7 is %q, want a (the latest event)", got)
	}
}

package trace

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// TestVocabulary checks the names of the flight recorder's event types and
// waker contexts against the C enums of the BPF object (its BTF): an event
// added in bpf/rtscope.h without its name here fails.
func TestVocabulary(t *testing.T) {
	types, err := engine.CEnum("rts_event_type")
	if err != nil {
		t.Fatal(err)
	}
	if len(typeNames) != len(types)-1 { // RTS_EV_NONE has no name
		t.Errorf("%d event types named, rts_event_type has %d", len(typeNames), len(types)-1)
	}
	for c, v := range types {
		if c == "RTS_EV_NONE" {
			continue
		}
		// RTS_EV_SOFTIRQ_ENTRY is "softirq_entry".
		if want := EventType(strings.ToLower(strings.TrimPrefix(c, "RTS_EV_"))); typeNames[uint8(v)] != want {
			t.Errorf("%s = %d is named %q, want %q", c, v, typeNames[uint8(v)], want)
		}
	}
	wakers, err := engine.CEnum("rts_waker_ctx")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint8{"RTS_WAKER_TASK": wakerTask, "RTS_WAKER_HARDIRQ": wakerHardIRQ,
		"RTS_WAKER_SOFTIRQ": wakerSoftIRQ, "RTS_WAKER_TIMER": wakerTimer}
	if len(wakers) != len(want) {
		t.Errorf("rts_waker_ctx: %v; the decoder knows %v", wakers, want)
	}
	for c, v := range wakers {
		if w, ok := want[c]; !ok || uint64(w) != v {
			t.Errorf("%s = %d: the decoder has %d (known: %v)", c, v, w, ok)
		}
	}
}

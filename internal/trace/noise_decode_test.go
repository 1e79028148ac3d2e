package trace

import (
	"encoding/binary"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// noiseEvent is a noise event of tid from x to y (absolute), its largest
// part's cause top and who, and its causes' mask.
func noiseEvent(tid uint32, x, y uint64, top uint8, who uint32, mask uint16) engine.Event {
	e := engine.Event{Type: evNoise, A: tid, B: who, Flags: top, C: mask}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], x)
	binary.LittleEndian.PutUint64(b[8:], y)
	for i := range b {
		e.Comm[i] = int8(b[i])
	}
	return e
}

// A noise event's causes come from its 16-bit mask, the NMI's bit (8)
// above a byte included; an IPI's who is its x86 vector, named by its
// kind, or the engine's IPI kind itself (arm64).
func TestDecodeNoiseIPIAndNMI(t *testing.T) {
	n := NewNames(nil, nil)
	mask := uint16(1)<<engine.NoiseIPI | uint16(1)<<engine.NoiseNMI | uint16(1)<<engine.NoiseIRQ
	for _, c := range []struct {
		who  uint32
		kind IPIKind
	}{{0xfb, IPICall}, {0xfc, IPICall}, {0xfd, IPIResched}, {0xf6, IPIIRQWork}, {uint32(engine.IPIResched), IPIResched}} {
		e := noiseEvent(7, 1_500, 2_500, engine.NoiseIPI, c.who, mask)
		var ev Event
		decodeNoise(&ev, &e, 1_000, n)
		if ev.TopCause != NoiseIPI || ev.IPI == nil || ev.IPI.Kind != c.kind {
			t.Errorf("who %#x: top %q, IPI %+v; want ipi, %s", c.who, ev.TopCause, ev.IPI, c.kind)
		}
		want := []NoiseCause{NoiseIRQ, NoiseIPI, NoiseNMI}
		if len(ev.NoiseCauses) != len(want) {
			t.Fatalf("causes %v, want %v", ev.NoiseCauses, want)
		}
		for i := range want {
			if ev.NoiseCauses[i] != want[i] {
				t.Errorf("causes %v, want %v", ev.NoiseCauses, want)
			}
		}
		if *ev.SinceT != 500 || *ev.EndT != 1_500 {
			t.Errorf("interval [%d, %d], want [500, 1500]", *ev.SinceT, *ev.EndT)
		}
	}
	e := noiseEvent(7, 1_500, 2_500, engine.NoiseNMI, 0, 1<<engine.NoiseNMI)
	var ev Event
	decodeNoise(&ev, &e, 1_000, n)
	if ev.TopCause != NoiseNMI || len(ev.NoiseCauses) != 1 || ev.NoiseCauses[0] != NoiseNMI || ev.IPI != nil {
		t.Errorf("an NMI interval: top %q, causes %v, IPI %+v", ev.TopCause, ev.NoiseCauses, ev.IPI)
	}
}

// An NMI event names its handler and its start, its end the event's time.
func TestDecodeNMI(t *testing.T) {
	n := NewNames(nil, nil)
	e := engine.Event{Ts: 9_000, Type: evNMI, Flags: 1}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], 0xfeed0)
	binary.LittleEndian.PutUint64(b[8:], 6_000)
	for i := range b {
		e.Comm[i] = int8(b[i])
	}
	ev := n.decode(e, 1_000)
	if ev.Type != EventNMI || ev.SinceT == nil || *ev.SinceT != 5_000 || ev.T != 8_000 || ev.Function == "" {
		t.Errorf("NMI decoded as %+v; want type nmi, since 5000, at 8000, a function", ev)
	}
}

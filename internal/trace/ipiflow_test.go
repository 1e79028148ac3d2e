package trace

import (
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

func ipiSend(t int64, cpu, to int, tid uint32, kind IPIKind) Event {
	return Event{T: t, CPU: cpu, Type: EventIPISend, TID: tid, TargetCPU: &to, IPI: &IPI{Kind: kind, SenderTID: tid}}
}

func ipiEntry(t int64, cpu, from int, tid uint32, kind IPIKind) Event {
	p := &IPI{Kind: kind}
	if tid != 0 {
		p.SenderTID, p.SenderCPU = tid, &from
	}
	return Event{T: t, CPU: cpu, Type: EventIPIEntry, IPI: p}
}

// PairIPIs follows the engine's attribution: a receipt takes the latest
// send before it of its sender, CPU and kind to its CPU, once.
func TestPairIPIs(t *testing.T) {
	for _, c := range []struct {
		name string
		evs  []Event
		want map[int]int
	}{
		{"paired", []Event{ipiSend(100, 0, 1, 200, IPITLB), ipiEntry(300, 1, 0, 200, IPITLB)}, map[int]int{1: 0}},
		{"no send in the events", []Event{ipiEntry(300, 1, 0, 200, IPITLB)}, nil},
		{"no sender seen", []Event{ipiSend(100, 0, 1, 200, IPITLB), ipiEntry(300, 1, 0, 0, IPITLB)}, nil},
		{"send after the receipt", []Event{ipiEntry(300, 1, 0, 200, IPITLB), ipiSend(400, 0, 1, 200, IPITLB)}, nil},
		// The second send overwrote the first's slot: one IPI ran both.
		{"two sends, one receipt", []Event{ipiSend(100, 0, 1, 200, IPITLB), ipiSend(150, 0, 1, 200, IPITLB),
			ipiEntry(300, 1, 0, 200, IPITLB)}, map[int]int{2: 1}},
		{"two sends, two receipts", []Event{ipiSend(100, 0, 1, 200, IPITLB), ipiEntry(200, 1, 0, 200, IPITLB),
			ipiSend(300, 0, 1, 200, IPITLB), ipiEntry(400, 1, 0, 200, IPITLB)}, map[int]int{1: 0, 3: 2}},
		// The first receipt took the only send: the second has none.
		{"one send, two receipts", []Event{ipiSend(100, 0, 1, 200, IPITLB), ipiEntry(200, 1, 0, 200, IPITLB),
			ipiEntry(400, 1, 0, 200, IPITLB)}, map[int]int{1: 0}},
		{"two senders to one CPU", []Event{ipiSend(100, 0, 1, 200, IPITLB), ipiSend(110, 2, 1, 300, IPICall),
			ipiEntry(200, 1, 2, 300, IPICall), ipiEntry(250, 1, 0, 200, IPITLB)}, map[int]int{2: 1, 3: 0}},
		{"another target", []Event{ipiSend(100, 0, 2, 200, IPITLB), ipiEntry(300, 1, 0, 200, IPITLB)}, nil},
		{"another kind", []Event{ipiSend(100, 0, 1, 200, IPIResched), ipiEntry(300, 1, 0, 200, IPITLB)}, nil},
		{"another sender CPU", []Event{ipiSend(100, 2, 1, 200, IPITLB), ipiEntry(300, 1, 0, 200, IPITLB)}, nil},
	} {
		got := PairIPIs(len(c.evs), func(i int) *Event { return &c.evs[i] })
		if len(got) != len(c.want) {
			t.Errorf("%s: pairs %v, want %v", c.name, got, c.want)
			continue
		}
		for r, s := range c.want {
			if g, ok := got[r]; !ok || g != s {
				t.Errorf("%s: pairs %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// A window keeps the IPI sends to its CPUs from any CPU, and each receipt
// it holds names its send's time.
func TestCutKeepsIPISendsToItsCPUs(t *testing.T) {
	f := &fakeRings{per: 64}
	f.add(1, 900, evSwitch, 50, 7, "control")
	f.add(0, 1100, evSwitch, 60, 200, "intruder") // CPU 0 not involved: dropped
	f.add(0, 1200, evIPISend, 200, 1, "intruder") // to CPU 1: kept
	f.add(0, 1300, evIPISend, 200, 2, "intruder") // to CPU 2: dropped
	f.add(1, 1500, evIPIEntry, 200, 190, "")
	f.evs[1][len(f.evs[1])-1].C = 0 // sender CPU
	f.add(1, 1600, evIPIExit, 200, 0, "")
	f.add(1, 3000, evSwitch, 7, 0, "idle")
	for cpu := range f.evs {
		for i := range f.evs[cpu] {
			if e := &f.evs[cpu][i]; e.Type == evIPISend || e.Type == evIPIEntry || e.Type == evIPIExit {
				e.Flags = engine.IPITLB
			}
		}
	}
	tr, err := Cut(f, Window{Metric: "response", TID: 7, Value: 2000, Start: 1000, End: 3000, CPUStart: 1, CPUEnd: 1}, NewNames(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	var sends, entries int
	for _, e := range tr.Events {
		switch e.Type {
		case EventIPISend:
			sends++
			if e.CPU != 0 || *e.TargetCPU != 1 || e.T != 200 {
				t.Errorf("send kept: %+v", e)
			}
		case EventIPIEntry:
			entries++
			if e.IPI.SentT == nil || *e.IPI.SentT != 200 {
				t.Errorf("receipt's send at %v, want 200", e.IPI.SentT)
			}
		case EventSwitch:
			if e.CPU != 1 {
				t.Errorf("switch of CPU %d kept", e.CPU)
			}
		}
	}
	if sends != 1 || entries != 1 {
		t.Errorf("%d sends and %d receipts kept, want 1 and 1", sends, entries)
	}
}

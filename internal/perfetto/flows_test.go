package perfetto_test

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/perfetto"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// ipiWindow holds, on CPU 0, two TLB shootdown sends of intruder/200 to
// CPU 1 (the second overwrites the first: one IPI runs both), the receipt
// on CPU 1 that answers them, and a receipt from a sender whose send is
// not in the window.
func ipiWindow(start uint64) *trace.Trace {
	tlb := func(tid uint32, comm string) *trace.IPI {
		return &trace.IPI{Kind: trace.IPITLB, SenderTID: tid, SenderComm: comm, SenderCPU: ip(0), Function: "flush_tlb_func"}
	}
	return &trace.Trace{
		Metric: "latency", TID: 100, Value: 6000, Start: start, End: start + 7000, CPUs: []int{1}, CPUEnd: 1, CPUStart: 1,
		Events: []trace.Event{
			{T: 100, CPU: 0, Type: trace.EventIPISend, TID: 200, Comm: "intruder", TargetCPU: ip(1), IPI: tlb(200, "intruder")},
			{T: 150, CPU: 0, Type: trace.EventIPISend, TID: 200, Comm: "intruder", TargetCPU: ip(1), IPI: tlb(200, "intruder")},
			{T: 3000, CPU: 1, Type: trace.EventIPIEntry, IPI: tlb(200, "intruder")},
			{T: 5000, CPU: 1, Type: trace.EventIPIExit, IPI: tlb(200, "intruder")},
			{T: 6000, CPU: 1, Type: trace.EventIPIEntry, IPI: tlb(300, "other")},
			{T: 6500, CPU: 1, Type: trace.EventIPIExit, IPI: tlb(300, "other")},
		},
	}
}

// flowEvents are the track events of a decoded trace that carry a flow,
// with the name of their track.
func flowEvents(tr *pTrace) (starts, ends map[string][]flowAt) {
	tracks := map[uint64]string{}
	for _, p := range tr.Packet {
		if d := p.Descriptor; d != nil {
			tracks[d.UUID] = d.Name
		}
	}
	starts, ends = map[string][]flowAt{}, map[string][]flowAt{}
	for _, p := range tr.Packet {
		e := p.TrackEvent
		if e == nil {
			continue
		}
		for _, id := range e.FlowIDs {
			starts[id] = append(starts[id], flowAt{p.Timestamp, tracks[e.TrackUUID], e.Type, e.Name})
		}
		for _, id := range e.TermFlowIDs {
			ends[id] = append(ends[id], flowAt{p.Timestamp, tracks[e.TrackUUID], e.Type, e.Name})
		}
	}
	return starts, ends
}

type flowAt struct {
	ts         uint64
	track, typ string
	name       string
}

// An IPI's send on the sender's CPU track and its handler's slice on the
// receiver's are joined by one flow; the overwritten send and the receipt
// without a send in the window have none.
func TestIPIFlow(t *testing.T) {
	const start = 7_000_000_000
	tr := write(t, []perfetto.Window{{Title: "ipi", Trace: ipiWindow(start)}})
	starts, ends := flowEvents(tr)
	if len(starts) != 1 || len(ends) != 1 {
		t.Fatalf("flows started %v, ended %v; want one of each", starts, ends)
	}
	for id, s := range starts {
		e := ends[id]
		if len(s) != 1 || len(e) != 1 {
			t.Fatalf("flow %s: starts %v ends %v, want one each", id, s, e)
		}
		if s[0].ts != start+150 || s[0].track != "CPU 0 rtscope events" || s[0].typ != "TYPE_INSTANT" {
			t.Errorf("flow %s starts at %+v, want the second send, an instant on CPU 0's track", id, s[0])
		}
		if e[0].ts != start+3000 || e[0].track != "CPU 1 rtscope events" || e[0].typ != "TYPE_SLICE_BEGIN" ||
			e[0].name != "IPI TLB shootdown from intruder/200" {
			t.Errorf("flow %s ends at %+v, want the handler slice's begin on CPU 1's track", id, e[0])
		}
	}
}

// A receipt and its send cut in two overlapping windows (each with the
// send's time relative to its own start) are drawn once, with one flow.
func TestIPIFlowOverlappingWindows(t *testing.T) {
	const start = 7_000_000_000
	a, b := ipiWindow(start), ipiWindow(start+50)
	for i := range b.Events {
		b.Events[i].T -= 50
	}
	for _, w := range []*trace.Trace{a, b} {
		sent := w.Events[1].T
		w.Events[2].IPI.SentT = &sent
	}
	tr := write(t, []perfetto.Window{{Title: "a", Trace: a}, {Title: "b", Trace: b}})
	starts, ends := flowEvents(tr)
	if len(starts) != 1 || len(ends) != 1 {
		t.Errorf("flows started %v, ended %v; want one of each", starts, ends)
	}
	n := 0
	for _, p := range tr.Packet {
		if e := p.TrackEvent; e != nil && strings.HasSuffix(e.Name, "IPI TLB shootdown from intruder/200") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the receipt is drawn %d times, want once", n)
	}
}

// In the recorded ipi-storm report (internal/report/testdata/fixtures),
// every receipt whose send its window holds (sent_t_ns) ends a flow that
// starts at that send, an instant on the sender's CPU track.
func TestRecordedIPIFlows(t *testing.T) {
	f, err := os.Open("../report/testdata/fixtures/ipi-storm.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.NewDecoder(z).Decode(&r); err != nil {
		t.Fatal(err)
	}
	ws := perfetto.Windows(&r)
	tr := write(t, ws) // its windows overlap: check() does not apply
	starts, ends := flowEvents(tr)
	endAt := map[uint64]string{} // receipt time: its flow
	for id, e := range ends {
		s := starts[id]
		if len(e) != 1 || len(s) != 1 {
			t.Fatalf("flow %s: starts %v, ends %v; want one each", id, s, e)
		}
		if !strings.HasPrefix(s[0].name, "IPI ") || !strings.Contains(s[0].name, " to CPU ") || s[0].typ != "TYPE_INSTANT" ||
			!strings.Contains(e[0].name, "IPI ") || s[0].ts > e[0].ts || s[0].track == e[0].track {
			t.Errorf("flow %s from %+v to %+v", id, s[0], e[0])
		}
		endAt[e[0].ts] = id
	}
	n := 0
	for _, w := range ws {
		for _, e := range w.Trace.Events {
			if e.Type != trace.EventIPIEntry || e.IPI == nil || e.IPI.SentT == nil {
				continue
			}
			n++
			id, ok := endAt[w.Trace.Start+uint64(e.T)]
			if !ok {
				t.Errorf("receipt at %d ns of %q (sent at %d ns) ends no flow", e.T, w.Title, *e.IPI.SentT)
				continue
			}
			if s := starts[id][0]; s.ts != w.Trace.Start+uint64(*e.IPI.SentT) || s.track != fmt.Sprintf("CPU %d rtscope events", *e.IPI.SenderCPU) {
				t.Errorf("receipt at %d ns of %q: flow from %+v, want its send at %d ns on CPU %d", e.T, w.Title, s,
					*e.IPI.SentT, *e.IPI.SenderCPU)
			}
		}
	}
	if n == 0 || len(ends) == 0 {
		t.Errorf("%d receipts with their send, %d flows: want some", n, len(ends))
	}
	t.Logf("%d flows; %d receipts of the windows name their send", len(ends), n)
}

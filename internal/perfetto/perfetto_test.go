package perfetto_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/rtscope/rtscope/internal/analysis"
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/perfetto"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// The output is decoded with messages built at test time from
// testdata/perfetto_subset.proto (Perfetto's field numbers, see there): a
// dynamic message per message of the schema, as protoc's generated code
// would decode it. The decoded trace is then read through its JSON form
// (protojson, proto field names) into the structs below.

type pTrace struct {
	Packet []pPacket `json:"packet"`
}

type pPacket struct {
	Timestamp  uint64       `json:"timestamp,string"`
	Seq        uint32       `json:"trusted_packet_sequence_id"`
	Flags      uint32       `json:"sequence_flags"`
	Ftrace     *pBundle     `json:"ftrace_events"`
	Tree       *pTree       `json:"process_tree"`
	SystemInfo *pSystemInfo `json:"system_info"`
	Descriptor *pDescriptor `json:"track_descriptor"`
	TrackEvent *pTrackEvent `json:"track_event"`
}

type pSystemInfo struct {
	Utsname struct {
		Sysname string `json:"sysname"`
		Release string `json:"release"`
	} `json:"utsname"`
}

type pTree struct {
	Processes []struct {
		Pid           int32    `json:"pid"`
		Cmdline       []string `json:"cmdline"`
		CmdlineIsComm bool     `json:"cmdline_is_comm"`
	} `json:"processes"`
	Threads []struct {
		Tid  int32  `json:"tid"`
		Tgid int32  `json:"tgid"`
		Name string `json:"name"`
	} `json:"threads"`
}

type pBundle struct {
	CPU   uint32    `json:"cpu"`
	Event []pFtrace `json:"event"`
}

type pFtrace struct {
	Timestamp uint64 `json:"timestamp,string"`
	Pid       uint32 `json:"pid"`
	Switch    *struct {
		PrevComm  string `json:"prev_comm"`
		PrevPid   int32  `json:"prev_pid"`
		PrevPrio  int32  `json:"prev_prio"`
		PrevState int64  `json:"prev_state,string"`
		NextComm  string `json:"next_comm"`
		NextPid   int32  `json:"next_pid"`
		NextPrio  int32  `json:"next_prio"`
	} `json:"sched_switch"`
	Waking *struct {
		Comm      string `json:"comm"`
		Pid       int32  `json:"pid"`
		Prio      int32  `json:"prio"`
		TargetCPU int32  `json:"target_cpu"`
	} `json:"sched_waking"`
	Migrate *struct {
		Comm    string `json:"comm"`
		Pid     int32  `json:"pid"`
		OrigCPU int32  `json:"orig_cpu"`
		DestCPU int32  `json:"dest_cpu"`
	} `json:"sched_migrate_task"`
	IrqEntry *struct {
		Irq  int32  `json:"irq"`
		Name string `json:"name"`
	} `json:"irq_handler_entry"`
	IrqExit *struct {
		Irq int32 `json:"irq"`
	} `json:"irq_handler_exit"`
	SoftirqEntry *struct {
		Vec uint32 `json:"vec"`
	} `json:"softirq_entry"`
	SoftirqExit *struct {
		Vec uint32 `json:"vec"`
	} `json:"softirq_exit"`
}

type pDescriptor struct {
	UUID        uint64 `json:"uuid,string"`
	Parent      uint64 `json:"parent_uuid,string"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

type pTrackEvent struct {
	Type        string   `json:"type"`
	TrackUUID   uint64   `json:"track_uuid,string"`
	Name        string   `json:"name"`
	Annotations []pAnnot `json:"debug_annotations"`
	FlowIDs     []string `json:"flow_ids"`
	TermFlowIDs []string `json:"terminating_flow_ids"`
}

type pAnnot struct {
	Name   string   `json:"name"`
	Bool   bool     `json:"bool_value"`
	Uint   uint64   `json:"uint_value,string"`
	Int    int64    `json:"int_value,string"`
	String string   `json:"string_value"`
	Array  []pAnnot `json:"array_values"`
}

func (e *pTrackEvent) annot(name string) *pAnnot {
	for i := range e.Annotations {
		if e.Annotations[i].Name == name {
			return &e.Annotations[i]
		}
	}
	return nil
}

var (
	schemaOnce sync.Once
	schemaMsg  protoreflect.MessageDescriptor
	schemaErr  error
)

// traceDescriptor compiles the schema (protocompile: no protoc needed).
func traceDescriptor(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	schemaOnce.Do(func() {
		c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{ImportPaths: []string{"testdata"}}}
		files, err := c.Compile(context.Background(), "perfetto_subset.proto")
		if err != nil {
			schemaErr = err
			return
		}
		schemaMsg = files[0].Messages().ByName("Trace")
		if schemaMsg == nil {
			schemaErr = fmt.Errorf("no message Trace in the schema")
		}
	})
	if schemaErr != nil {
		t.Fatalf("schema: %v", schemaErr)
	}
	return schemaMsg
}

// decode parses a trace with the schema's messages. A field the schema does
// not declare, or declares with another wire type, stays unknown to the
// dynamic message: that fails the test, so every field written has the
// number and type the schema (Perfetto's) gives it.
func decode(t *testing.T, b []byte) *pTrace {
	t.Helper()
	m := dynamicpb.NewMessage(traceDescriptor(t))
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatalf("not a Trace: %v", err)
	}
	var unknown []string
	findUnknown(m, "Trace", &unknown)
	if len(unknown) > 0 {
		if len(unknown) > 10 {
			unknown = append(unknown[:10], "...")
		}
		t.Fatalf("fields not in the schema (wrong number or wire type): %s", strings.Join(unknown, ", "))
	}
	j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out pTrace
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func findUnknown(m protoreflect.ProtoMessage, path string, out *[]string) {
	r := m.ProtoReflect()
	if len(r.GetUnknown()) > 0 {
		*out = append(*out, path)
	}
	r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		p := path + "." + string(fd.Name())
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				findUnknown(l.Get(i).Message().Interface(), fmt.Sprintf("%s[%d]", p, i), out)
			}
		} else {
			findUnknown(v.Message().Interface(), p, out)
		}
		return true
	})
}

func write(t *testing.T, ws []perfetto.Window) *pTrace {
	t.Helper()
	var buf bytes.Buffer
	if err := perfetto.Write(&buf, ws); err != nil {
		t.Fatal(err)
	}
	return decode(t, buf.Bytes())
}

// ftraceTypes are the event types written as ftrace events.
var ftraceTypes = map[trace.EventType]bool{"switch": true, "wakeup": true, "migrate": true, "irq_entry": true,
	"irq_exit": true, "softirq_entry": true, "softirq_exit": true}

// wantState is the kernel's prev_state (4.14+) of rtscope's state letters.
func wantState(letters string, preempted bool) int64 {
	if preempted || letters == "R+" {
		return 0x100
	}
	return map[string]int64{"R": 0, "S": 1, "D": 2, "D(rtlock)": 2, "T": 4, "t": 8, "X": 0x10, "Z": 0x20,
		"P": 0x40, "I": 0x80}[letters]
}

// ftraceKey describes an ftrace event of rtscope's event e, for comparison.
func ftraceKey(e *trace.Event, ts uint64) string {
	head := fmt.Sprintf("cpu %d ts %d %s", e.CPU, ts, e.Type)
	switch e.Type {
	case "switch":
		return fmt.Sprintf("%s %s/%d prio %d state %#x -> %s/%d prio %d", head, e.PrevComm, e.PrevTID, e.PrevKPrio,
			wantState(e.PrevState, e.Preempted), e.NextComm, e.NextTID, e.NextKPrio)
	case "wakeup":
		return fmt.Sprintf("%s %s/%d prio %d target %d", head, e.Comm, e.TID, e.KPrio, *e.TargetCPU)
	case "migrate":
		return fmt.Sprintf("%s %s/%d %d -> %d", head, e.Comm, e.TID, *e.FromCPU, *e.ToCPU)
	case "irq_entry":
		name := e.IRQName
		if name == "" {
			name = fmt.Sprintf("irq %d", *e.IRQ)
		}
		return fmt.Sprintf("%s %d %s", head, *e.IRQ, name)
	case "irq_exit":
		return fmt.Sprintf("%s %d", head, *e.IRQ)
	case "softirq_entry", "softirq_exit":
		return fmt.Sprintf("%s %d", head, *e.Vec)
	}
	return head
}

// decodedKey is ftraceKey of a decoded ftrace event.
func decodedKey(cpu uint32, f *pFtrace) string {
	head := func(typ string) string { return fmt.Sprintf("cpu %d ts %d %s", cpu, f.Timestamp, typ) }
	switch {
	case f.Switch != nil:
		s := f.Switch
		return fmt.Sprintf("%s %s/%d prio %d state %#x -> %s/%d prio %d", head("switch"), s.PrevComm, s.PrevPid,
			s.PrevPrio, s.PrevState, s.NextComm, s.NextPid, s.NextPrio)
	case f.Waking != nil:
		w := f.Waking
		return fmt.Sprintf("%s %s/%d prio %d target %d", head("wakeup"), w.Comm, w.Pid, w.Prio, w.TargetCPU)
	case f.Migrate != nil:
		m := f.Migrate
		return fmt.Sprintf("%s %s/%d %d -> %d", head("migrate"), m.Comm, m.Pid, m.OrigCPU, m.DestCPU)
	case f.IrqEntry != nil:
		return fmt.Sprintf("%s %d %s", head("irq_entry"), f.IrqEntry.Irq, f.IrqEntry.Name)
	case f.IrqExit != nil:
		return fmt.Sprintf("%s %d", head("irq_exit"), f.IrqExit.Irq)
	case f.SoftirqEntry != nil:
		return fmt.Sprintf("%s %d", head("softirq_entry"), f.SoftirqEntry.Vec)
	case f.SoftirqExit != nil:
		return fmt.Sprintf("%s %d", head("softirq_exit"), f.SoftirqExit.Vec)
	}
	return head("?")
}

// sameStrings compares two multisets, reporting the difference.
func sameStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	sort.Strings(got)
	sort.Strings(want)
	count := map[string]int{}
	for _, s := range want {
		count[s]++
	}
	for _, s := range got {
		count[s]--
	}
	var missing, extra []string
	for s, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, s)
		}
		for ; n < 0; n++ {
			extra = append(extra, s)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("%s: %d written, %d expected\nmissing:\n  %s\nunexpected:\n  %s", what, len(got), len(want),
			strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
	}
}

// check verifies that tr draws every event of the windows (which must not
// overlap: each event is expected once per window holding it).
func check(t *testing.T, ws []perfetto.Window, tr *pTrace) {
	t.Helper()
	var wantFtrace, gotFtrace []string
	wantOther := map[int][]string{} // per CPU: times of the events drawn on rtscope's CPU tracks
	comms := map[uint32]map[string]bool{}
	seen := func(tid uint32, comm string) {
		if tid == 0 {
			return
		}
		if comms[tid] == nil {
			comms[tid] = map[string]bool{}
		}
		if comm != "" && comm != "?" {
			comms[tid][comm] = true
		}
	}
	type wake struct {
		cpu int
		ts  uint64
		tid uint32
	}
	wakers := map[wake]uint32{} // task wakeups: the waker's tid
	for _, w := range ws {
		for i := range w.Trace.Events {
			e := &w.Trace.Events[i]
			ts := uint64(int64(w.Trace.Start) + e.T)
			if !ftraceTypes[e.Type] {
				wantOther[e.CPU] = append(wantOther[e.CPU], fmt.Sprint(ts))
				continue
			}
			wantFtrace = append(wantFtrace, ftraceKey(e, ts))
			switch e.Type {
			case "switch":
				seen(e.PrevTID, e.PrevComm)
				seen(e.NextTID, e.NextComm)
			case "wakeup":
				seen(e.TID, e.Comm)
				if e.Waker != nil && e.Waker.Kind == "task" {
					seen(e.Waker.TID, e.Waker.Comm)
					wakers[wake{e.CPU, ts, e.TID}] = e.Waker.TID
				}
			default:
				seen(e.TID, e.Comm)
			}
		}
	}

	desc := map[uint64]*pDescriptor{}
	byTrack := map[uint64][]*pTrackEvent{}
	threads := map[uint32]string{}
	tgids := map[uint32]int32{}
	var uts *pSystemInfo
	trackSeqFirst := true
	for i := range tr.Packet {
		p := &tr.Packet[i]
		switch {
		case p.Ftrace != nil:
			last := uint64(0)
			for j := range p.Ftrace.Event {
				f := &p.Ftrace.Event[j]
				if f.Timestamp < last {
					t.Errorf("cpu %d: ftrace event at %d after one at %d", p.Ftrace.CPU, f.Timestamp, last)
				}
				last = f.Timestamp
				gotFtrace = append(gotFtrace, decodedKey(p.Ftrace.CPU, f))
				if f.Waking != nil {
					if waker, ok := wakers[wake{int(p.Ftrace.CPU), f.Timestamp, uint32(f.Waking.Pid)}]; ok && f.Pid != waker {
						t.Errorf("wakeup of %d at %d: common pid %d, want the waker %d", f.Waking.Pid, f.Timestamp, f.Pid, waker)
					}
				}
			}
		case p.Tree != nil:
			for _, th := range p.Tree.Threads {
				threads[uint32(th.Tid)] = th.Name
				tgids[uint32(th.Tid)] = th.Tgid
			}
		case p.SystemInfo != nil:
			uts = p.SystemInfo
		case p.Descriptor != nil:
			desc[p.Descriptor.UUID] = p.Descriptor
		case p.TrackEvent != nil:
			byTrack[p.TrackEvent.TrackUUID] = append(byTrack[p.TrackEvent.TrackUUID], p.TrackEvent)
		}
		if p.Descriptor != nil || p.TrackEvent != nil {
			if p.Seq == 0 {
				t.Errorf("track packet %d without a sequence id", i)
			}
			if trackSeqFirst && p.Flags != 1 {
				t.Errorf("first track packet: sequence_flags %d, want SEQ_INCREMENTAL_STATE_CLEARED", p.Flags)
			}
			trackSeqFirst = false
		}
	}
	sameStrings(t, "ftrace events", gotFtrace, wantFtrace)

	// Every task is named in the process tree, with a comm it had.
	for tid, names := range comms {
		name, ok := threads[tid]
		if !ok {
			t.Errorf("tid %d not in the process tree", tid)
			continue
		}
		if len(names) > 0 && !names[name] {
			t.Errorf("tid %d named %q, want one of %v", tid, name, names)
		}
		want := int32(tid)
		for _, w := range ws {
			if pid, ok := w.PIDs[tid]; ok {
				want = int32(pid)
			}
		}
		if tgids[tid] != want {
			t.Errorf("tid %d in process %d, want %d", tid, tgids[tid], want)
		}
	}

	if uts == nil || uts.Utsname.Sysname != "Linux" {
		t.Errorf("system info: %+v, want sysname Linux", uts)
	} else if len(ws) > 0 && ws[0].Kernel != "" && uts.Utsname.Release != ws[0].Kernel {
		t.Errorf("kernel release %q, want %q", uts.Utsname.Release, ws[0].Kernel)
	}

	// Slices nest on every track, and close.
	for uuid, evs := range byTrack {
		d := desc[uuid]
		if d == nil {
			t.Errorf("track %d has events but no descriptor", uuid)
			continue
		}
		depth := 0
		for _, e := range evs {
			switch e.Type {
			case "TYPE_SLICE_BEGIN":
				depth++
			case "TYPE_SLICE_END":
				if depth--; depth < 0 {
					t.Errorf("track %q: slice end without a begin", d.Name)
				}
			}
		}
		if depth != 0 {
			t.Errorf("track %q: %d slices left open", d.Name, depth)
		}
	}

	// The other events are on their CPU's tracks, at their times.
	var windowsGroup, cpuGroup uint64
	for uuid, d := range desc {
		switch d.Name {
		case "rtscope windows":
			windowsGroup = uuid
		case "rtscope CPU events":
			cpuGroup = uuid
		}
	}
	gotOther := map[int][]string{}
	for uuid, d := range desc {
		if d.Parent != cpuGroup || cpuGroup == 0 {
			continue
		}
		var cpu int
		if _, err := fmt.Sscanf(d.Name, "CPU %d ", &cpu); err != nil {
			t.Errorf("CPU track %q: %v", d.Name, err)
		}
		for _, e := range byTrack[uuid] {
			gotOther[cpu] = append(gotOther[cpu], fmt.Sprint(tsOf(tr, e)))
		}
	}
	for cpu := range wantOther {
		sameStrings(t, fmt.Sprintf("CPU %d events on rtscope tracks", cpu), gotOther[cpu], wantOther[cpu])
	}
	for cpu := range gotOther {
		if wantOther[cpu] == nil {
			t.Errorf("CPU %d: %d rtscope events, none expected", cpu, len(gotOther[cpu]))
		}
	}

	// One track per window, with a slice over it carrying the verdict.
	for _, w := range ws {
		var uuid uint64
		for u, d := range desc {
			if d.Name == w.Title && d.Parent == windowsGroup && windowsGroup != 0 {
				uuid = u
			}
		}
		evs := byTrack[uuid]
		if uuid == 0 || len(evs) != 2 {
			t.Errorf("window %q: track %d with %d events, want a slice", w.Title, uuid, len(evs))
			continue
		}
		begin, end := evs[0], evs[1]
		if begin.Type != "TYPE_SLICE_BEGIN" || end.Type != "TYPE_SLICE_END" {
			t.Errorf("window %q: %s, %s, want a slice begin and end", w.Title, begin.Type, end.Type)
		}
		if b, e := tsOf(tr, begin), tsOf(tr, end); b != w.Trace.Start || e != w.Trace.End {
			t.Errorf("window %q: slice %d..%d, want %d..%d", w.Title, b, e, w.Trace.Start, w.Trace.End)
		}
		wantName := w.Cause
		if wantName == "" {
			wantName = w.Title
		}
		if begin.Name != wantName {
			t.Errorf("window %q: slice named %q, want %q", w.Title, begin.Name, wantName)
		}
		if w.Verdict != "" {
			if a := begin.annot("verdict"); a == nil || a.String != w.Verdict {
				t.Errorf("window %q: verdict %+v, want %q", w.Title, a, w.Verdict)
			}
		}
		if a := begin.annot("value_ns"); a == nil || a.Uint != w.Trace.Value {
			t.Errorf("window %q: value_ns %+v, want %d", w.Title, a, w.Trace.Value)
		}
		if a := begin.annot("tid"); a == nil || a.Uint != uint64(w.Trace.TID) {
			t.Errorf("window %q: tid %+v, want %d", w.Title, a, w.Trace.TID)
		}
		if w.Detail != nil {
			want, _ := json.Marshal(w.Detail)
			if a := begin.annot("analysis"); a == nil || a.String != string(want) {
				t.Errorf("window %q: analysis %+v, want %s", w.Title, a, want)
			}
		}
	}
}

// tsOf finds the timestamp of the packet holding a track event.
func tsOf(tr *pTrace, e *pTrackEvent) uint64 {
	for i := range tr.Packet {
		if tr.Packet[i].TrackEvent == e {
			return tr.Packet[i].Timestamp
		}
	}
	return 0
}

func ip(v int) *int       { return &v }
func i64p(v int64) *int64 { return &v }

// handWindow is a window of two CPUs holding every kind of event: a timer
// wakes the victim on CPU 0, an IRQ wakes its thread on CPU 1 which wakes a
// logger, a FIFO 99 hog takes CPU 0, the victim migrates to CPU 1.
func handWindow() *trace.Trace {
	const start = 5_000_000_000
	return &trace.Trace{
		Metric: "latency", TID: 100, Value: 6900, Start: start, End: start + 8000, CPUStart: 0, CPUEnd: 1,
		CPUs: []int{0, 1}, StealClock: true,
		Events: []trace.Event{
			{T: -30000, CPU: 0, Type: "timer_exit", Function: "tick_sched_timer", HardIRQ: true},
			{T: -20000, CPU: 0, Type: "switch", PrevTID: 50, PrevComm: "kworker/0:1", PrevKPrio: 120, PrevState: "I",
				NextTID: 100, NextComm: "victim", NextKPrio: 9},
			{T: -10000, CPU: 0, Type: "sleep", TID: 100, Comm: "victim", State: "S", Reason: "nanosleep",
				ExpiryT: i64p(0), Stack: []string{"do_nanosleep", "hrtimer_nanosleep"}},
			{T: -9000, CPU: 0, Type: "switch", PrevTID: 100, PrevComm: "victim", PrevKPrio: 9, PrevState: "S",
				NextTID: 0, NextComm: "idle", NextKPrio: 120},
			{T: 0, CPU: 0, Type: "timer_entry", Function: "hrtimer_wakeup", HardIRQ: true, ExpiryT: i64p(-500)},
			{T: 100, CPU: 0, Type: "wakeup", TID: 100, Comm: "victim", KPrio: 9, TargetCPU: ip(0),
				Waker: &trace.Waker{Kind: "timer", Function: "hrtimer_wakeup", KPrio: 120}},
			{T: 900, CPU: 0, Type: "timer_exit", Function: "hrtimer_wakeup", HardIRQ: true},
			{T: 1000, CPU: 0, Type: "irq_entry", IRQ: ip(30), IRQName: "eth0"},
			{T: 1500, CPU: 0, Type: "wakeup", TID: 300, Comm: "irq/30-eth0", KPrio: 49, TargetCPU: ip(1),
				Waker: &trace.Waker{Kind: "hardirq", IRQ: ip(30), IRQName: "eth0", KPrio: 120}},
			{T: 2000, CPU: 0, Type: "irq_exit", IRQ: ip(30), IRQName: "eth0"},
			{T: 2100, CPU: 0, Type: "softirq_entry", Vec: ip(3), VecName: "NET_RX"},
			{T: 2600, CPU: 0, Type: "softirq_exit", Vec: ip(3), VecName: "NET_RX"},
			{T: 2700, CPU: 0, Type: "irq_entry", IRQ: ip(31)}, // no name known
			{T: 2800, CPU: 0, Type: "irq_exit", IRQ: ip(31)},
			{T: 3000, CPU: 0, Type: "switch", PrevTID: 0, PrevComm: "idle", PrevKPrio: 120, PrevState: "R",
				NextTID: 400, NextComm: "hog", NextKPrio: 0},
			{T: 3500, CPU: 1, Type: "switch", PrevTID: 500, PrevComm: "bash", PrevKPrio: 120, PrevState: "R+", Preempted: true,
				NextTID: 300, NextComm: "irq/30-eth0", NextKPrio: 49},
			{T: 3600, CPU: 1, Type: "handler_entry", TID: 300, Comm: "irq/30-eth0", IRQ: ip(30), IRQName: "eth0"},
			{T: 3700, CPU: 1, Type: "wakeup", TID: 600, Comm: "logger", KPrio: 120, TargetCPU: ip(1),
				Waker: &trace.Waker{Kind: "task", TID: 300, Comm: "irq/30-eth0", KPrio: 49}},
			{T: 4000, CPU: 1, Type: "handler_exit", TID: 300, Comm: "irq/30-eth0", IRQ: ip(30), IRQName: "eth0"},
			{T: 4100, CPU: 1, Type: "switch", PrevTID: 300, PrevComm: "irq/30-eth0", PrevKPrio: 49, PrevState: "S",
				NextTID: 600, NextComm: "logger", NextKPrio: 120},
			{T: 4200, CPU: 1, Type: "migrate", TID: 100, Comm: "victim", FromCPU: ip(0), ToCPU: ip(1)},
			{T: 5000, CPU: 0, Type: "stack", TID: 400, Comm: "hog", WaitingTID: 100, Stack: []string{"hog_loop"}},
			{T: 6000, CPU: 0, Type: "steal", StealNs: 2500, SinceT: i64p(1000)},
			{T: 7000, CPU: 1, Type: "switch", PrevTID: 600, PrevComm: "logger", PrevKPrio: 120, PrevState: "D",
				NextTID: 100, NextComm: "victim", NextKPrio: 9},
			{T: 7000, CPU: 0, Type: "switch", PrevTID: 400, PrevComm: "hog", PrevKPrio: 0, PrevState: "D(rtlock)",
				NextTID: 0, NextComm: "idle", NextKPrio: 120},
			{T: 8000, CPU: 1, Type: "user_return", TID: 100, Comm: "victim"},
			{T: 8500, CPU: 1, Type: "timer_entry", Function: "tick_sched_timer", HardIRQ: true, ExpiryT: i64p(8400)},
			{T: 9000, CPU: 1, Type: "exit", TID: 600, Comm: "logger"},
			{T: 9500, CPU: 1, Type: "type17"},
		},
	}
}

// handDetail has the shape of an analysis result's JSON.
type handDetail struct {
	Cause     string     `json:"cause"`
	Culprit   string     `json:"culprit"`
	Breakdown []handItem `json:"breakdown"`
}

type handItem struct {
	Phase   string  `json:"phase"`
	Kind    string  `json:"kind"`
	Label   string  `json:"label"`
	Ns      uint64  `json:"ns"`
	Percent float64 `json:"percent"`
	CPU     int     `json:"cpu"`
}

func TestWindowSurvives(t *testing.T) {
	w := perfetto.Window{
		Title: "worst latency of victim/100: 6.9 us", Trace: handWindow(), Verdict: "hog/400 (FIFO 99) ran instead",
		Cause: "interference", Kernel: "6.8.0-rt8", PIDs: map[uint32]uint32{100: 99, 99: 99},
		Detail: handDetail{Cause: "interference", Culprit: "hog/400", Breakdown: []handItem{
			{Phase: "runnable", Kind: "interference", Label: "hog/400 (FIFO 99)", Ns: 4000, Percent: 58, CPU: 0},
			{Phase: "release", Kind: "timer", Label: "hrtimer_wakeup", Ns: 2900, Percent: 42, CPU: -1}}},
	}
	tr := write(t, []perfetto.Window{w})
	check(t, []perfetto.Window{w}, tr)

	var begin *pTrackEvent
	instants := map[string]bool{}
	slices := map[string]bool{}
	for i := range tr.Packet {
		e := tr.Packet[i].TrackEvent
		if e == nil {
			continue
		}
		switch {
		case e.Type == "TYPE_SLICE_BEGIN" && e.Name == "interference":
			begin = e
		case e.Type == "TYPE_SLICE_BEGIN":
			slices[e.Name] = true
		case e.Type == "TYPE_INSTANT":
			instants[e.Name] = true
		}
	}
	if begin == nil {
		t.Fatal("no slice for the window")
	}
	if a := begin.annot("breakdown"); a == nil || len(a.Array) != 2 ||
		a.Array[0].String != "58.0% 4.0 us interference: hog/400 (FIFO 99) [runnable, CPU 0]" ||
		a.Array[1].String != "42.0% 2.9 us timer: hrtimer_wakeup [release]" {
		t.Errorf("breakdown %+v", a)
	}
	for name, want := range map[string]string{"cause": "interference", "culprit": "hog/400", "metric": "latency", "cpus": "0,1"} {
		if a := begin.annot(name); a == nil || a.String != want {
			t.Errorf("%s: %+v, want %q", name, a, want)
		}
	}
	// Paired entries and exits are slices, the others instants.
	for _, name := range []string{"hrtimer_wakeup", "handler eth0"} {
		if !slices[name] {
			t.Errorf("no slice %q among %v", name, slices)
		}
	}
	for _, name := range []string{"timer_exit tick_sched_timer", "timer_entry tick_sched_timer", "sleep victim",
		"stack of hog", "steal 2.5 us", "user_return victim", "exit logger", "type17"} {
		if !instants[name] {
			t.Errorf("no instant %q among %v", name, instants)
		}
	}
	// The process tree names processes by their main thread.
	for _, p := range tr.Packet {
		if p.Tree == nil {
			continue
		}
		for _, proc := range p.Tree.Processes {
			if proc.Pid == 99 {
				t.Errorf("process 99 written without a name: %+v", proc)
			}
			if proc.Pid == 100 {
				t.Errorf("thread 100 of process 99 written as a process")
			}
			if proc.Pid == 400 && (len(proc.Cmdline) != 1 || proc.Cmdline[0] != "hog" || !proc.CmdlineIsComm) {
				t.Errorf("process 400: %+v", proc)
			}
		}
	}
}

// fixture is a window recorded on a real machine (internal/analysis/testdata/windows).
type fixture struct {
	Subject struct {
		TID           uint32  `json:"tid"`
		Comm          string  `json:"comm"`
		Policy        string  `json:"policy"`
		Sched         string  `json:"sched"`
		Priority      *int    `json:"priority"`
		Nice          *int    `json:"nice"`
		NominalPeriod *uint64 `json:"nominal_period_ns"`
	} `json:"subject"`
	Metric string       `json:"metric"`
	Trace  *trace.Trace `json:"trace"`
}

func TestRecordedWindowsSurvive(t *testing.T) {
	files, err := filepath.Glob("../analysis/testdata/windows/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded windows: %v", err)
	}
	var ws []perfetto.Window
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		task := &report.Task{TID: fx.Subject.TID, Comm: fx.Subject.Comm, Policy: fx.Subject.Policy, Sched: fx.Subject.Sched,
			Priority: fx.Subject.Priority, Nice: fx.Subject.Nice, NominalPeriodNs: fx.Subject.NominalPeriod}
		r := analysis.Explain(fx.Trace, explain.SubjectOf(task, fx.Metric))
		ws = append(ws, perfetto.Window{Title: filepath.Base(f), Trace: fx.Trace, Verdict: r.Verdict, Cause: r.Cause.String(), Detail: r})
	}
	tr := write(t, ws)
	check(t, ws, tr)
	n := 0
	for _, p := range tr.Packet {
		if p.Ftrace != nil {
			n += len(p.Ftrace.Event)
		}
	}
	if n == 0 {
		t.Error("no ftrace events written")
	}
}

// Windows cut from the same recorder overlap: their events are drawn once.
func TestOverlappingWindowsDrawnOnce(t *testing.T) {
	a := handWindow()
	// b is the same recording cut 1 us later, and one more switch.
	b := *a
	b.Start += 1000
	b.End += 2000
	b.Events = nil
	for _, e := range a.Events {
		e.T -= 1000
		if e.ExpiryT != nil {
			e.ExpiryT = i64p(*e.ExpiryT - 1000)
		}
		if e.SinceT != nil {
			e.SinceT = i64p(*e.SinceT - 1000)
		}
		b.Events = append(b.Events, e)
	}
	b.Events = append(b.Events, trace.Event{T: 8500, CPU: 0, Type: "switch", PrevTID: 0, PrevComm: "idle", PrevKPrio: 120,
		PrevState: "R", NextTID: 400, NextComm: "hog", NextKPrio: 0})
	tr := write(t, []perfetto.Window{{Title: "a", Trace: a}, {Title: "b", Trace: &b}})
	windowTracks := map[uint64]bool{}
	for _, p := range tr.Packet {
		if d := p.Descriptor; d != nil && (d.Name == "a" || d.Name == "b") {
			windowTracks[d.UUID] = true
		}
	}
	switches, others, slices := 0, 0, 0
	for _, p := range tr.Packet {
		if p.Ftrace != nil {
			for _, f := range p.Ftrace.Event {
				if f.Switch != nil {
					switches++
				}
			}
		}
		if e := p.TrackEvent; e != nil {
			if windowTracks[e.TrackUUID] {
				slices++
			} else {
				others++
			}
		}
	}
	want := 0
	wantOthers := 0
	for _, e := range a.Events {
		if e.Type == "switch" {
			want++
		}
		if !ftraceTypes[e.Type] {
			wantOthers++
		}
	}
	if switches != want+1 {
		t.Errorf("%d switches written, want %d", switches, want+1)
	}
	if others != wantOthers {
		t.Errorf("%d rtscope CPU events written, want %d", others, wantOthers)
	}
	if slices != 4 {
		t.Errorf("%d window slice events, want 4 (a slice per window)", slices)
	}
}

func TestEventBeforeClockOrigin(t *testing.T) {
	tr := &trace.Trace{Metric: "latency", Start: 100, End: 200,
		Events: []trace.Event{{T: -200, CPU: 0, Type: "switch"}}}
	var buf bytes.Buffer
	err := perfetto.Write(&buf, []perfetto.Window{{Title: "w", Trace: tr}})
	if err == nil || !strings.Contains(err.Error(), "outside CLOCK_MONOTONIC") {
		t.Fatalf("err = %v, want an event outside the clock refused", err)
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rtscope.pftrace")
	w := perfetto.Window{Title: "w", Trace: handWindow()}
	if err := perfetto.WriteFile(path, []perfetto.Window{w}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check(t, []perfetto.Window{w}, decode(t, b))
	if err := perfetto.WriteFile(filepath.Join(path, "x"), nil); err == nil {
		t.Error("writing below a file succeeded")
	}
}

func TestPrevState(t *testing.T) {
	for _, c := range []struct {
		letters   string
		preempted bool
		want      int64
	}{
		{"R", false, 0}, {"R+", true, 0x100}, {"R+", false, 0x100}, {"S", true, 0x100}, {"S", false, 1},
		{"D", false, 2}, {"D(rtlock)", false, 2}, {"T", false, 4}, {"t", false, 8}, {"X", false, 0x10},
		{"Z", false, 0x20}, {"P", false, 0x40}, {"I", false, 0x80}, {"0x200", false, 0},
	} {
		if got := perfetto.PrevState(c.letters, c.preempted); got != c.want {
			t.Errorf("PrevState(%q, %v) = %#x, want %#x", c.letters, c.preempted, got, c.want)
		}
	}
}

func TestWindowsOfReport(t *testing.T) {
	a, b, c := handWindow(), handWindow(), handWindow()
	b.Start, b.End = b.Start+1e9, b.End+1e9
	c.Metric, c.Start, c.End = "response", c.Start+2e9, c.End+2e9
	cCopy := *c // the same window, decoded again
	a.Value = 812400
	r := &report.Report{Kernel: "6.8.0", Tasks: []*report.Task{
		{TID: 101, PID: 100, Comm: "control", Metrics: map[string]*report.Metric{
			"latency": {Worst: a, Verdict: "worst verdict", Cause: "interference", Analysis: report.Decoded{"cause": "interference"},
				ViolationCauses: &report.Violations{Total: 5, Analysed: 4, Causes: []*report.ViolationCause{
					{Cause: "interference", Count: 3, Example: &report.ViolationExample{ValueNs: 812400, Verdict: "same", Window: a}},
					{Cause: "hardirq", Count: 1, Example: &report.ViolationExample{ValueNs: 700000, Verdict: "irq verdict", Window: b}},
					{Cause: "softirq", Count: 1, Example: &report.ViolationExample{ValueNs: 600000, Verdict: "dropped window"}},
				}}},
			"response": {Worst: c, Verdict: "response verdict", Cause: "execution",
				ViolationCauses: &report.Violations{Total: 1, Analysed: 1, Causes: []*report.ViolationCause{
					{Cause: "execution", Count: 1, Example: &report.ViolationExample{ValueNs: 6900, Window: &cCopy}},
				}}},
			"cycle": {Summary: metric.Summary{Count: 3}},
		}},
		{TID: 200, PID: 200, Comm: "idle-task", Metrics: map[string]*report.Metric{"latency": {}}},
	}}
	for _, p := range report.Check(r) {
		t.Errorf("report check: %s", p)
	}
	ws := perfetto.Windows(r)
	want := []struct {
		title, verdict, cause string
		tr                    *trace.Trace
		detail                bool
	}{
		{"worst latency of control/101: 812.4 us", "worst verdict", "interference", a, true},
		{"SLO violation, latency of control/101: 700.0 us (hardirq: 1 of 4 explained)", "irq verdict", "hardirq", b, false},
		{"worst response of control/101: 6.9 us", "response verdict", "execution", c, false},
	}
	if len(ws) != len(want) {
		for _, w := range ws {
			t.Logf("window %q", w.Title)
		}
		t.Fatalf("%d windows, want %d", len(ws), len(want))
	}
	for i, w := range want {
		got := ws[i]
		if got.Title != w.title || got.Verdict != w.verdict || got.Cause != w.cause || got.Trace != w.tr ||
			(got.Detail != nil) != w.detail {
			t.Errorf("window %d: %q %q %q %p detail %v, want %q %q %q %p detail %v", i, got.Title, got.Verdict, got.Cause,
				got.Trace, got.Detail != nil, w.title, w.verdict, w.cause, w.tr, w.detail)
		}
		if got.Kernel != "6.8.0" || got.PIDs[101] != 100 || got.PIDs[200] != 200 {
			t.Errorf("window %d: kernel %q, pids %v", i, got.Kernel, got.PIDs)
		}
	}
	// The windows of a report overlap in nothing here: all drawn.
	check(t, ws, write(t, ws))
}

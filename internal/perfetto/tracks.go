package perfetto

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// Track uuids: any value unique in the trace but 0 (the trace-global track).
const (
	uuidWindows = 0x7274_7363_6f70_6501 // "rtscope" in ASCII, then 01: the group of the windows
	uuidCPUs    = 0x7274_7363_6f70_6502 // group of the per-CPU tracks
	uuidWindow0 = 1 << 40               // + index of the window
	uuidCPU0    = 2 << 40               // + 2*cpu + trackTimers or trackOther
)

// The two tracks of a CPU: slices of one track must nest, and on
// PREEMPT_RT a threaded handler and a timer callback run in threads, so
// they may overlap without nesting.
const (
	trackTimers = iota // timer callbacks
	trackOther         // threaded IRQ handlers, sleeps, stacks, steal, returns, exits
)

// tev is one track event to write at ts.
type tev struct {
	ts uint64
	m  *msg
}

// trackEvents writes rtscope's tracks: a slice per window carrying the
// verdict, and per CPU the events ftrace has no event for.
func (o *writer) trackEvents(first uint64, ws []Window, byCPU map[int][]event, flows map[*trace.Event]flowEnd) error {
	var evs []tev
	o.descriptor(first, uuidWindows, 0, "rtscope windows",
		"One track per window rtscope explained: select its slice for the verdict, the cause and the breakdown.",
		func(d *msg) { d.varint(fTrackDescChildOrder, childOrderChrono) })
	for i, w := range ws {
		tr := w.Trace
		if tr == nil {
			continue
		}
		uuid := uint64(uuidWindow0 + i)
		o.descriptor(first, uuid, uuidWindows, w.Title, w.Verdict,
			func(d *msg) { d.varint(fTrackDescSiblingMrg, siblingMergeNone) })
		anns, err := windowAnnotations(w)
		if err != nil {
			return err
		}
		name := w.Cause
		if name == "" {
			name = w.Title
		}
		end := tr.End
		if end < tr.Start {
			end = tr.Start
		}
		evs = append(evs, tev{tr.Start, trackEvent(typeSliceBegin, uuid, name, anns)},
			tev{end, trackEvent(typeSliceEnd, uuid, "", nil)})
	}
	grouped := false
	for _, cpu := range sortedCPUs(byCPU) {
		tracks := cpuTrackEvents(cpu, byCPU[cpu], flows)
		for k, what := range [2]string{"timer callbacks", "rtscope events"} {
			if len(tracks[k]) == 0 {
				continue
			}
			if !grouped {
				o.descriptor(first, uuidCPUs, 0, "rtscope CPU events",
					"Per CPU, the events rtscope records that ftrace has no event for: timer callbacks, threaded IRQ handlers, sleeps, stack samples, hypervisor steal.",
					func(d *msg) { d.varint(fTrackDescChildOrder, childOrderExplicit) })
				grouped = true
			}
			rank := 2*cpu + k
			o.descriptor(first, cpuTrack(cpu, k), uuidCPUs, fmt.Sprintf("CPU %d %s", cpu, what), "",
				func(d *msg) { d.sint(fTrackDescSiblingRank, int64(rank)) })
			evs = append(evs, tracks[k]...)
		}
	}
	// Stable: a slice's begin stays before its end at the same time.
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].ts < evs[j].ts })
	for _, e := range evs {
		var p msg
		p.varint(fPacketTimestamp, e.ts)
		p.varint(fPacketSequenceID, seqTracks)
		p.sub(fPacketTrackEvent, e.m)
		o.packet(&p)
	}
	return nil
}

func cpuTrack(cpu, k int) uint64 { return uint64(uuidCPU0 + 2*cpu + k) }

// descriptor writes a TrackDescriptor. The first packet of the sequence
// says its incremental state starts there, as Perfetto's writers do.
func (o *writer) descriptor(ts, uuid, parent uint64, name, desc string, more func(*msg)) {
	var d msg
	d.varint(fTrackDescUUID, uuid)
	d.str(fTrackDescName, name)
	if parent != 0 {
		d.varint(fTrackDescParentUUID, parent)
	}
	if desc != "" {
		d.str(fTrackDescDesc, desc)
	}
	if more != nil {
		more(&d)
	}
	var p msg
	p.varint(fPacketTimestamp, ts)
	p.varint(fPacketSequenceID, seqTracks)
	if !o.trackSeqStarted {
		p.varint(fPacketSequenceFlags, seqIncrementalStateClrd)
		o.trackSeqStarted = true
	}
	p.sub(fPacketTrackDescriptor, &d)
	o.packet(&p)
}

func trackEvent(typ, uuid uint64, name string, anns []*msg) *msg {
	var te msg
	te.varint(fTrackEventType, typ)
	te.varint(fTrackEventTrackUUID, uuid)
	if name != "" {
		te.str(fTrackEventName, name)
	}
	for _, a := range anns {
		te.sub(fTrackEventAnnotations, a)
	}
	return &te
}

// Debug annotations (non-interned names), shown as the slice's arguments.

func annString(name, v string) *msg {
	var a msg
	a.str(fAnnotName, name)
	a.str(fAnnotString, v)
	return &a
}

func annUint(name string, v uint64) *msg {
	var a msg
	a.str(fAnnotName, name)
	a.varint(fAnnotUint, v)
	return &a
}

func annInt(name string, v int64) *msg {
	var a msg
	a.str(fAnnotName, name)
	a.sint(fAnnotInt, v)
	return &a
}

func annBool(name string, v bool) *msg {
	var a msg
	a.str(fAnnotName, name)
	a.boolean(fAnnotBool, v)
	return &a
}

// annStrings is an array of strings (a stack, the breakdown's lines).
func annStrings(name string, vs []string) *msg {
	var a msg
	a.str(fAnnotName, name)
	for _, v := range vs {
		var e msg
		e.str(fAnnotString, v)
		a.sub(fAnnotArrayValues, &e)
	}
	return &a
}

// detail is what the annotations show of an analysis result
// (analysis.Result), read from its JSON so that any result of that shape
// does.
type detail struct {
	Culprit   string `json:"culprit"`
	Breakdown []struct {
		Phase   string  `json:"phase"`
		Kind    string  `json:"kind"`
		Label   string  `json:"label"`
		Ns      uint64  `json:"ns"`
		Percent float64 `json:"percent"`
		CPU     int     `json:"cpu"`
	} `json:"breakdown"`
}

// windowAnnotations are the arguments of a window's slice.
func windowAnnotations(w Window) ([]*msg, error) {
	tr := w.Trace
	var a []*msg
	if w.Verdict != "" {
		a = append(a, annString("verdict", w.Verdict))
	}
	if w.Cause != "" {
		a = append(a, annString("cause", w.Cause))
	}
	cpus := make([]string, len(tr.CPUs))
	for i, c := range tr.CPUs {
		cpus[i] = strconv.Itoa(c)
	}
	a = append(a, annString("metric", tr.Metric), annUint("tid", uint64(tr.TID)), annUint("value_ns", tr.Value),
		annUint("start_ns", tr.Start), annUint("end_ns", tr.End), annString("cpus", strings.Join(cpus, ",")))
	if tr.Truncated {
		a = append(a, annBool("truncated", true))
	}
	if tr.Note != "" {
		a = append(a, annString("note", tr.Note))
	}
	if w.Detail == nil {
		return a, nil
	}
	b, err := json.Marshal(w.Detail)
	if err != nil {
		return nil, fmt.Errorf("window %q: analysis: %w", w.Title, err)
	}
	var d detail
	if json.Unmarshal(b, &d) == nil { // another shape has no breakdown to show
		if d.Culprit != "" {
			a = append(a, annString("culprit", d.Culprit))
		}
		if len(d.Breakdown) > 0 {
			lines := make([]string, len(d.Breakdown))
			for i, it := range d.Breakdown {
				where := it.Phase
				if it.CPU >= 0 {
					where += ", CPU " + strconv.Itoa(it.CPU)
				}
				lines[i] = fmt.Sprintf("%.1f%% %s us %s: %s [%s]", it.Percent, units.Us(it.Ns), it.Kind, it.Label, where)
			}
			a = append(a, annStrings("breakdown", lines))
		}
	}
	return append(a, annString("analysis", string(b))), nil
}

// cpuTrackEvents turns the events of a CPU that ftrace has no event for into
// track events on the CPU's two tracks: entries and exits paired into
// slices, anything else (and an entry or exit whose pair is not in the
// windows) an instant; an IPI's send and receipt carry their flow.
func cpuTrackEvents(cpu int, evs []event, flows map[*trace.Event]flowEnd) [2][]tev {
	pairs := pairedEvents(evs)
	var out [2][]tev
	for i, ev := range evs {
		k, typ, name, anns, ok := cpuTrackEvent(ev, pairs[i])
		if !ok {
			continue // ftrace events
		}
		te := trackEvent(typ, cpuTrack(cpu, k), name, anns)
		if f, ok := flows[ev.e]; ok {
			addFlow(te, f)
		}
		out[k] = append(out[k], tev{ev.ts, te})
	}
	return out
}

// pairedEvents are the indexes in evs of the entries and exits that pair:
// an exit closes the innermost open entry of the same key; entries above
// it lost their exit. Every slice then nests, as Perfetto requires of a
// track.
func pairedEvents(evs []event) map[int]bool {
	pairs := map[int]bool{}
	var open [2][]int
	for i, ev := range evs {
		k, key, entry, ok := pairing(ev)
		if !ok {
			continue
		}
		if entry {
			open[k] = append(open[k], i)
			continue
		}
		for j := len(open[k]) - 1; j >= 0; j-- {
			if _, key2, _, _ := pairing(evs[open[k][j]]); key2 == key {
				pairs[i], pairs[open[k][j]] = true, true
				open[k] = open[k][:j]
				break
			}
		}
	}
	return pairs
}

// cpuTrackEvent is the track event of one event of a CPU: its track (k),
// type, name and annotations; ok is false for the events ftrace has.
// paired tells an entry or exit whose pair is in the windows.
func cpuTrackEvent(ev event, paired bool) (k int, typ uint64, name string, anns []*msg, ok bool) {
	e := ev.e
	switch e.Type {
	case trace.EventSwitch, trace.EventWakeup, trace.EventMigrate, trace.EventIRQEntry, trace.EventIRQExit, trace.EventSoftirqEntry, trace.EventSoftirqExit:
		return 0, 0, "", nil, false
	case trace.EventTimerEntry, trace.EventTimerExit:
		anns = append(anns, annBool("hardirq", e.HardIRQ))
		if e.ExpiryT != nil {
			anns = append(anns, annInt("expiry_ns", *absRel(e.ExpiryT, ev.start)))
		}
		typ, name, anns = sliceOrInstant(e, paired, trace.EventTimerEntry, e.Function, anns)
		return trackTimers, typ, name, anns, true
	case trace.EventHandlerEntry, trace.EventHandlerExit:
		anns = []*msg{annUint("tid", uint64(e.TID)), annString("comm", e.Comm)}
		if e.IRQ != nil {
			anns = append(anns, annInt("irq", int64(*e.IRQ)))
		}
		typ, name, anns = sliceOrInstant(e, paired, trace.EventHandlerEntry, IRQName(e), anns)
		if typ == typeSliceBegin {
			name = "handler " + name
		}
		return trackOther, typ, name, anns, true
	case trace.EventSleep:
		anns = []*msg{annUint("tid", uint64(e.TID)), annString("comm", e.Comm), annString("state", e.State)}
		if e.Reason != "" {
			anns = append(anns, annString("reason", e.Reason.String()))
		}
		if e.ExpiryT != nil {
			anns = append(anns, annInt("expiry_ns", *absRel(e.ExpiryT, ev.start)))
		}
		if len(e.Stack) > 0 {
			anns = append(anns, annStrings("stack", e.Stack))
		}
		return trackOther, typeInstant, "sleep " + e.Comm, anns, true
	case trace.EventStack:
		anns = []*msg{annUint("tid", uint64(e.TID)), annString("comm", e.Comm), annUint("waiting_tid", uint64(e.WaitingTID))}
		if e.Reason != "" {
			anns = append(anns, annString("reason", e.Reason.String()))
		}
		if len(e.Stack) > 0 {
			anns = append(anns, annStrings("stack", e.Stack))
		}
		return trackOther, typeInstant, "stack of " + e.Comm, anns, true
	case trace.EventSteal:
		anns = []*msg{annUint("steal_ns", e.StealNs)}
		if e.SinceT != nil {
			anns = append(anns, annInt("since_ns", *absRel(e.SinceT, ev.start)))
		}
		return trackOther, typeInstant, "steal " + units.Us(e.StealNs) + " us", anns, true
	case trace.EventUserReturn, trace.EventExit, trace.EventTimerArm:
		return trackOther, typeInstant, e.Type.String() + " " + e.Comm, []*msg{annUint("tid", uint64(e.TID)), annString("comm", e.Comm)}, true
	case trace.EventNoise:
		return noiseTrackEvent(ev)
	case trace.EventIPISend, trace.EventIPIEntry, trace.EventIPIExit:
		typ, name, anns = ipiTrackEvent(e, paired)
		return trackOther, typ, name, anns, true
	}
	b, _ := json.Marshal(e) // plain data: cannot fail
	return trackOther, typeInstant, e.Type.String(), []*msg{annString("event", string(b))}, true
}

// sliceOrInstant makes an entry or exit (entry: its entry type) the begin
// or end of a slice when it is paired (an end has no name nor
// annotations), else an instant named by its type and what.
func sliceOrInstant(e *trace.Event, paired bool, entry trace.EventType, what string, anns []*msg) (uint64, string, []*msg) {
	switch {
	case paired && e.Type == entry:
		return typeSliceBegin, what, anns
	case paired:
		return typeSliceEnd, "", nil
	}
	return typeInstant, e.Type.String() + " " + what, anns
}

// pairing tells which track an entry or exit event is on, the key its pair
// has, and whether it is the entry; ok is false for other events.
func pairing(ev event) (track int, key string, entry, ok bool) {
	e := ev.e
	switch e.Type {
	case trace.EventTimerEntry, trace.EventTimerExit:
		return trackTimers, e.Function + "/" + strconv.FormatBool(e.HardIRQ), e.Type == trace.EventTimerEntry, true
	case trace.EventHandlerEntry, trace.EventHandlerExit:
		irq := -1
		if e.IRQ != nil {
			irq = *e.IRQ
		}
		return trackOther, strconv.Itoa(irq) + "/" + strconv.FormatUint(uint64(e.TID), 10), e.Type == trace.EventHandlerEntry, true
	case trace.EventIPIEntry, trace.EventIPIExit:
		return trackOther, "ipi", e.Type == trace.EventIPIEntry, true // IPI handlers do not nest
	}
	return 0, "", false, false
}

// noiseTrackEvent is a noise interval's instant, where it was recorded:
// its task, length, causes and largest part.
func noiseTrackEvent(ev event) (k int, typ uint64, name string, anns []*msg, ok bool) {
	e := ev.e
	var ns int64
	if e.SinceT != nil && e.EndT != nil {
		ns = *e.EndT - *e.SinceT
		anns = append(anns, annInt("start_ns", *absRel(e.SinceT, ev.start)), annInt("end_ns", *absRel(e.EndT, ev.start)))
	}
	causes := make([]string, len(e.NoiseCauses))
	for i, c := range e.NoiseCauses {
		causes[i] = string(c)
	}
	anns = append(anns, annUint("tid", uint64(e.TID)), annString("comm", e.Comm), annStrings("causes", causes),
		annString("largest", string(e.TopCause)))
	return trackOther, typeInstant, "noise " + e.Comm + " " + units.Us(uint64(max(ns, 0))) + " us", anns, true
}

// ipiTrackEvent is an IPI's track event: a send is an instant on the
// sender's CPU ("IPI tlb_shootdown to CPU 1"), a receipt a slice on the
// receiver's, named by its kind and sender.
func ipiTrackEvent(e *trace.Event, paired bool) (uint64, string, []*msg) {
	p := e.IPI
	if p == nil {
		p = &trace.IPI{}
	}
	anns := []*msg{annString("kind", p.Kind.String())}
	if p.SenderTID != 0 {
		anns = append(anns, annUint("sender_tid", uint64(p.SenderTID)), annString("sender_comm", p.SenderComm))
	}
	if p.Function != "" {
		anns = append(anns, annString("function", p.Function))
	}
	if e.Type == trace.EventIPISend {
		to := -1
		if e.TargetCPU != nil {
			to = *e.TargetCPU
		}
		return typeInstant, fmt.Sprintf("IPI %s to CPU %d", p.Kind, to), anns
	}
	what := "IPI " + p.Kind.Noun()
	if s := p.Sender(); s != "" {
		what += " from " + s
	}
	return sliceOrInstant(e, paired, trace.EventIPIEntry, what, anns)
}

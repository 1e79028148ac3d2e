package perfetto

import "google.golang.org/protobuf/encoding/protowire"

// Field numbers of the Perfetto trace protos (package perfetto.protos,
// github.com/google/perfetto, protos/perfetto/...). Only what rtscope
// writes; testdata/perfetto_subset.proto declares the same messages and
// fields for the tests to decode the output with.
const (
	// trace/trace.proto: Trace
	fTracePacket = 1

	// trace/trace_packet.proto: TracePacket
	fPacketFtraceEvents     = 1  // FtraceEventBundle
	fPacketProcessTree      = 2  // ProcessTree
	fPacketTimestamp        = 8  // uint64
	fPacketSequenceID       = 10 // trusted_packet_sequence_id, uint32
	fPacketTrackEvent       = 11 // TrackEvent
	fPacketSequenceFlags    = 13 // uint32
	fPacketSystemInfo       = 45 // SystemInfo
	fPacketTrackDescriptor  = 60 // TrackDescriptor
	seqIncrementalStateClrd = 1  // TracePacket.SequenceFlags SEQ_INCREMENTAL_STATE_CLEARED

	// common/system_info.proto: SystemInfo, Utsname
	fSystemInfoUtsname = 1
	fUtsnameSysname    = 1
	fUtsnameRelease    = 3
	fUtsnameMachine    = 4

	// trace/ps/process_tree.proto: ProcessTree, .Process, .Thread
	fTreeProcesses        = 1
	fTreeThreads          = 2
	fProcessPid           = 1
	fProcessCmdline       = 3
	fProcessCmdlineIsComm = 9
	fThreadTid            = 1
	fThreadName           = 2
	fThreadTgid           = 3

	// trace/ftrace/ftrace_event_bundle.proto: FtraceEventBundle
	fBundleCPU    = 1
	fBundleEvents = 2

	// trace/ftrace/ftrace_event.proto: FtraceEvent
	fEventTimestamp    = 1
	fEventPid          = 2
	fEventSchedSwitch  = 4
	fEventSchedWaking  = 20
	fEventSoftirqEntry = 24
	fEventSoftirqExit  = 25
	fEventIrqEntry     = 36
	fEventIrqExit      = 37
	fEventSchedMigrate = 491

	// trace/ftrace/sched.proto: SchedSwitchFtraceEvent
	fSwitchPrevComm  = 1
	fSwitchPrevPid   = 2
	fSwitchPrevPrio  = 3
	fSwitchPrevState = 4
	fSwitchNextComm  = 5
	fSwitchNextPid   = 6
	fSwitchNextPrio  = 7

	// trace/ftrace/sched.proto: SchedWakingFtraceEvent
	fWakingComm      = 1
	fWakingPid       = 2
	fWakingPrio      = 3
	fWakingTargetCPU = 5

	// trace/ftrace/sched.proto: SchedMigrateTaskFtraceEvent
	fMigrateComm    = 1
	fMigratePid     = 2
	fMigrateOrigCPU = 4
	fMigrateDestCPU = 5

	// trace/ftrace/irq.proto: IrqHandlerEntryFtraceEvent, IrqHandlerExitFtraceEvent,
	// SoftirqEntryFtraceEvent, SoftirqExitFtraceEvent
	fIrqEntryIrq  = 1
	fIrqEntryName = 2
	fIrqExitIrq   = 1
	fSoftirqVec   = 1

	// trace/track_event/track_descriptor.proto: TrackDescriptor
	fTrackDescUUID        = 1
	fTrackDescName        = 2
	fTrackDescParentUUID  = 5
	fTrackDescChildOrder  = 11
	fTrackDescSiblingRank = 12
	fTrackDescDesc        = 14
	fTrackDescSiblingMrg  = 15
	childOrderChrono      = 2 // ChildTracksOrdering CHRONOLOGICAL
	childOrderExplicit    = 3 // ChildTracksOrdering EXPLICIT
	siblingMergeNone      = 2 // SiblingMergeBehavior SIBLING_MERGE_BEHAVIOR_NONE

	// trace/track_event/track_event.proto: TrackEvent
	fTrackEventAnnotations = 4
	fTrackEventType        = 9
	fTrackEventTrackUUID   = 11
	fTrackEventName        = 23
	fTrackEventFlowIDs     = 47 // repeated fixed64
	fTrackEventTermFlowIDs = 48 // repeated fixed64 terminating_flow_ids
	typeSliceBegin         = 1  // TrackEvent.Type
	typeSliceEnd           = 2
	typeInstant            = 3

	// trace/track_event/debug_annotation.proto: DebugAnnotation
	fAnnotBool        = 2
	fAnnotUint        = 3
	fAnnotInt         = 4
	fAnnotString      = 6
	fAnnotName        = 10
	fAnnotArrayValues = 12
)

// msg builds one protobuf message in the wire format. Fields are written
// even when zero: proto2 keeps presence, and a pid or a CPU of 0 means
// something in ftrace events.
type msg struct{ b []byte }

func (m *msg) varint(n protowire.Number, v uint64) {
	m.b = protowire.AppendTag(m.b, n, protowire.VarintType)
	m.b = protowire.AppendVarint(m.b, v)
}

// sint writes an int32 or int64 field: negative values are sign-extended to
// 64 bits, as protobuf encodes both.
func (m *msg) sint(n protowire.Number, v int64) { m.varint(n, uint64(v)) }

func (m *msg) boolean(n protowire.Number, v bool) {
	var x uint64
	if v {
		x = 1
	}
	m.varint(n, x)
}

func (m *msg) str(n protowire.Number, s string) {
	m.b = protowire.AppendTag(m.b, n, protowire.BytesType)
	m.b = protowire.AppendString(m.b, s)
}

// sub writes an embedded message.
func (m *msg) sub(n protowire.Number, sub *msg) {
	m.b = protowire.AppendTag(m.b, n, protowire.BytesType)
	m.b = protowire.AppendBytes(m.b, sub.b)
}

// appendTagLen appends the tag and length of a length-delimited field whose
// bytes follow.
func appendTagLen(b []byte, n protowire.Number, l int) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(l))
}

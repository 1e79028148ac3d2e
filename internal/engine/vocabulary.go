package engine

import (
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// The C enums of bpf/rtscope.h that user space reads, as bpf2go generates
// them (gen.go -type): the header is their one home. TestVocabulary checks
// every Go table that names them (metric, trace, report) against the
// object's own BTF.

// Event types of the flight recorder (enum rts_event_type, Event.Type).
const (
	EventSwitch       = uint8(bpfRtsEventTypeRTS_EV_SWITCH)
	EventWakeup       = uint8(bpfRtsEventTypeRTS_EV_WAKEUP)
	EventMigrate      = uint8(bpfRtsEventTypeRTS_EV_MIGRATE)
	EventIRQEntry     = uint8(bpfRtsEventTypeRTS_EV_IRQ_ENTRY)
	EventIRQExit      = uint8(bpfRtsEventTypeRTS_EV_IRQ_EXIT)
	EventSoftirqEntry = uint8(bpfRtsEventTypeRTS_EV_SOFTIRQ_ENTRY)
	EventSoftirqExit  = uint8(bpfRtsEventTypeRTS_EV_SOFTIRQ_EXIT)
	EventTimerEntry   = uint8(bpfRtsEventTypeRTS_EV_TIMER_ENTRY)
	EventTimerExit    = uint8(bpfRtsEventTypeRTS_EV_TIMER_EXIT)
	EventSleep        = uint8(bpfRtsEventTypeRTS_EV_SLEEP)
	EventUserReturn   = uint8(bpfRtsEventTypeRTS_EV_USER_RETURN)
	EventHandlerEntry = uint8(bpfRtsEventTypeRTS_EV_HANDLER_ENTRY)
	EventHandlerExit  = uint8(bpfRtsEventTypeRTS_EV_HANDLER_EXIT)
	EventExit         = uint8(bpfRtsEventTypeRTS_EV_EXIT)
	EventStack        = uint8(bpfRtsEventTypeRTS_EV_STACK)
	EventSteal        = uint8(bpfRtsEventTypeRTS_EV_STEAL)
	// EventTimerArm: a tracked task armed its own sleeper timer (one loop
	// iteration ended); Flags 1 when its expiry had already passed.
	EventTimerArm = uint8(bpfRtsEventTypeRTS_EV_TIMER_ARM)
	EventFaults   = uint8(bpfRtsEventTypeRTS_EV_FAULTS)
	// EventNoise: a noise interval of a tracked task (A) from X to Y;
	// Flags its largest part's cause (Noise*, NoiseTop), B that part's
	// irq, vector or tid, C 1<<cause of each of its parts (NoiseMask: 16
	// bits, more causes than Flags has bits).
	EventNoise = uint8(bpfRtsEventTypeRTS_EV_NOISE)
	// EventNMI: an NMI handler (X) ended, begun at Y; Flags 1 when it
	// claimed the NMI.
	EventNMI = uint8(bpfRtsEventTypeRTS_EV_NMI)
)

// NoiseTop is a noise event's largest part's cause (Noise*).
func NoiseTop(e *Event) uint8 { return e.Flags }

// NoiseMask is a noise event's causes: bit 1<<cause set for each.
func NoiseMask(e *Event) uint16 { return e.C }

// Causes of a noise interval's parts (enum rts_noise_cause).
const (
	NoiseIRQ        = uint8(bpfRtsNoiseCauseRTS_NC_IRQ)
	NoiseTimer      = uint8(bpfRtsNoiseCauseRTS_NC_TIMER)
	NoiseSoftirq    = uint8(bpfRtsNoiseCauseRTS_NC_SOFTIRQ)
	NoisePreempt    = uint8(bpfRtsNoiseCauseRTS_NC_PREEMPT)
	NoiseThrottle   = uint8(bpfRtsNoiseCauseRTS_NC_THROTTLE)
	NoiseSteal      = uint8(bpfRtsNoiseCauseRTS_NC_STEAL)
	NoiseIPI        = uint8(bpfRtsNoiseCauseRTS_NC_IPI)
	NoiseNMI        = uint8(bpfRtsNoiseCauseRTS_NC_NMI)
	NoiseCauseCount = int(bpfRtsNoiseCauseRTS_NC_COUNT)
)

// Waker contexts, in the flags of an EventWakeup (enum rts_waker_ctx).
const (
	WakerTask    = uint8(bpfRtsWakerCtxRTS_WAKER_TASK)
	WakerHardIRQ = uint8(bpfRtsWakerCtxRTS_WAKER_HARDIRQ)
	WakerSoftIRQ = uint8(bpfRtsWakerCtxRTS_WAKER_SOFTIRQ)
	WakerTimer   = uint8(bpfRtsWakerCtxRTS_WAKER_TIMER)
)

// Notice types (enum rts_notice_type, Notice.Type).
const (
	NoticeTaskStart = uint32(bpfRtsNoticeTypeRTS_N_TASK_START)
	NoticeTaskExit  = uint32(bpfRtsNoticeTypeRTS_N_TASK_EXIT)
	NoticeNewMax    = uint32(bpfRtsNoticeTypeRTS_N_NEW_MAX)
	// NoticeSLOViolation: a sample over its SLO that is not a new maximum
	// (at most one a millisecond per task: RTS_VIOL_NOTICE_GAP_NS).
	NoticeSLOViolation = uint32(bpfRtsNoticeTypeRTS_N_SLO_VIOLATION)
	// NoticeCgroupAttach: a process moved into a wanted cgroup; its
	// other threads are tracked by the next Scan.
	NoticeCgroupAttach = uint32(bpfRtsNoticeTypeRTS_N_CGROUP_ATTACH)
	// noticeHistCarry: a histogram bucket's carry, which the engine keeps
	// (histCarries) rather than returning it.
	noticeHistCarry = uint32(bpfRtsNoticeTypeRTS_N_HIST_CARRY)
)

// Counters of what was lost or refused (enum rts_counter), indexes of
// Counters.
const (
	CounterNoticeLost  = int(bpfRtsCounterRTS_C_NOTICE_LOST)
	CounterStatsFull   = int(bpfRtsCounterRTS_C_STATS_FULL)
	CounterStorageFail = int(bpfRtsCounterRTS_C_STORAGE_FAIL)
	CounterEvents      = int(bpfRtsCounterRTS_C_EVENTS)
	CounterStackLost   = int(bpfRtsCounterRTS_C_STACK_LOST)
	// CounterTrackDeferred: tasks whose task storage was busy when they
	// were to be tracked; tracked at their next switch-in instead.
	CounterTrackDeferred = int(bpfRtsCounterRTS_C_TRACK_DEFERRED)
	// CounterUnseenWakeups: wakeups of tracked tasks the kernel did not
	// report: a task asleep since its last switch-out was next seen on its
	// CPU (its switch-in, or its switch-out).
	CounterUnseenWakeups = int(bpfRtsCounterRTS_C_UNSEEN_WAKEUPS)
	counterCount         = int(bpfRtsCounterRTS_C_COUNT)
)

// HygieneCount is the number of hygiene counters the kernel keeps per task
// (enum rts_hygiene), the first entries of report.HygieneNames.
const HygieneCount = int(bpfRtsHygieneRTS_H_COUNT)

// Indexes of TaskStats.Hygiene kept from the task's kernel structures.
const (
	HygieneMinorFaults  = int(bpfRtsHygieneRTS_H_MINOR_FAULTS)
	HygieneMajorFaults  = int(bpfRtsHygieneRTS_H_MAJOR_FAULTS)
	HygieneMemNotLocked = int(bpfRtsHygieneRTS_H_MEM_NOT_LOCKED) // 1: no mlockall(MCL_FUTURE), no locked page
)

// CEnum returns the enumerators of a C enum of the watch engine's BPF
// object (rts_metric, rts_event_type, ...) by name, read from the object's
// BTF: the tests that check Go's names for them use it. It loads nothing
// into the kernel.
func CEnum(name string) (map[string]uint64, error) {
	spec, err := loadBpf()
	if err != nil {
		return nil, fmt.Errorf("reading the BPF object: %w", err)
	}
	var e *btf.Enum
	if err := spec.Types.TypeByName(name, &e); err != nil {
		return nil, fmt.Errorf("enum %s: %w", name, err)
	}
	out := make(map[string]uint64, len(e.Values))
	for _, v := range e.Values {
		out[v.Name] = v.Value
	}
	return out, nil
}

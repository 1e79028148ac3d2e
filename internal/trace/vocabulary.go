package trace

// The vocabulary of decoded events: each a named type whose text is the
// JSON's, with its constants here, where events are decoded. They are
// strings underneath, so a name a newer rtscope writes (a report read back)
// is kept as it is rather than refused.

// EventType is the type of a flight recorder event (enum rts_event_type),
// named as the JSON "type" writes it. Immutable: safe for concurrent use.
type EventType string

// Event types; typeNames maps the engine's values to them. An event of a
// type this build does not know is "typeN", N its value.
const (
	EventSwitch       EventType = "switch"
	EventWakeup       EventType = "wakeup"
	EventMigrate      EventType = "migrate"
	EventIRQEntry     EventType = "irq_entry"
	EventIRQExit      EventType = "irq_exit"
	EventSoftirqEntry EventType = "softirq_entry"
	EventSoftirqExit  EventType = "softirq_exit"
	EventTimerEntry   EventType = "timer_entry"
	EventTimerExit    EventType = "timer_exit"
	EventSleep        EventType = "sleep"
	EventUserReturn   EventType = "user_return"
	EventHandlerEntry EventType = "handler_entry"
	EventHandlerExit  EventType = "handler_exit"
	EventExit         EventType = "exit"
	EventStack        EventType = "stack"
	EventSteal        EventType = "steal"
	EventTimerArm     EventType = "timer_arm"
	EventFaults       EventType = "faults"    // page faults of a tracked task's run
	EventIPISend      EventType = "ipi_send"  // IPI work queued for another CPU (--ipi)
	EventIPIEntry     EventType = "ipi_entry" // an IPI handler begins on this CPU
	EventIPIExit      EventType = "ipi_exit"  // an IPI handler ends
	EventNoise        EventType = "noise"     // a noise interval of a tracked task (noise.bpf.h)
	EventNMI          EventType = "nmi"       // an NMI handler ended (x86 nmi:nmi_handler)
)

// NoiseCause names a part of a noise interval (enum rts_noise_cause).
// Immutable: safe for concurrent use.
type NoiseCause string

// Noise causes; NoiseCauses maps the engine's values to them.
const (
	NoiseIRQ         NoiseCause = "irq"         // a device hard IRQ handler
	NoiseTimer       NoiseCause = "timer_irq"   // an hrtimer callback in hard IRQ context (the local timer interrupt)
	NoiseSoftirq     NoiseCause = "softirq"     // a softirq
	NoisePreempt     NoiseCause = "preemption"  // off its CPU while runnable, for its class and higher or equal priority
	NoiseThrottle    NoiseCause = "throttling"  // off its CPU while runnable, for a lower class or priority
	NoiseSteal       NoiseCause = "steal"       // the hypervisor ran something else
	NoiseIPI         NoiseCause = "ipi"         // an IPI's handler (function call, TLB shootdown, reschedule, irq_work)
	NoiseNMI         NoiseCause = "nmi"         // an NMI handler (perf sampling, watchdog, backtrace)
	NoiseUnexplained NoiseCause = "unexplained" // time no seen part covers
)

// String returns the type's name.
func (t EventType) String() string { return string(t) }

// MarshalText writes the name.
func (t EventType) MarshalText() ([]byte, error) { return []byte(t), nil }

// UnmarshalText reads a name.
func (t *EventType) UnmarshalText(b []byte) error { *t = EventType(b); return nil }

// Entry tells an IRQ, softirq or timer callback entry: a frame opens.
func (t EventType) Entry() bool {
	return t == EventIRQEntry || t == EventSoftirqEntry || t == EventTimerEntry || t == EventIPIEntry
}

// Exit tells an IRQ, softirq or timer callback exit: a frame closes.
func (t EventType) Exit() bool {
	return t == EventIRQExit || t == EventSoftirqExit || t == EventTimerExit || t == EventIPIExit
}

// IPIKind is what an IPI asks of its CPU (enum rts_ipi_kind), named as the
// JSON writes it. Immutable: safe for concurrent use.
type IPIKind string

// IPI kinds; ipiKinds maps the engine's values to them.
const (
	IPICall    IPIKind = "function_call" // smp_call_function*, a remote irq_work
	IPITLB     IPIKind = "tlb_shootdown" // flush_tlb_func: another CPU changed a shared mm's mappings
	IPIResched IPIKind = "reschedule"    // a remote wakeup or preemption
	IPIIRQWork IPIKind = "irq_work"      // the CPU's own deferred work (a self-IPI)
	IPIWakeup  IPIKind = "remote_wakeup" // a wakeup queued for this CPU (sched_ttwu_pending)
)

// String returns the kind's name.
func (k IPIKind) String() string { return string(k) }

// Noun is the kind in a sentence: "TLB shootdown".
func (k IPIKind) Noun() string {
	switch k {
	case IPITLB:
		return "TLB shootdown"
	case IPICall:
		return "function call"
	case IPIResched:
		return "reschedule"
	case IPIWakeup:
		return "remote wakeup"
	}
	return string(k)
}

// WakerKind says in which context a task was woken (enum rts_waker_ctx).
// Immutable: safe for concurrent use.
type WakerKind string

// Waker kinds.
const (
	WakerTask    WakerKind = "task"    // a task, in task context
	WakerHardIRQ WakerKind = "hardirq" // an IRQ handler
	WakerSoftIRQ WakerKind = "softirq" // a softirq vector
	WakerTimer   WakerKind = "timer"   // an hrtimer callback: a timer release
)

// String returns the kind's name.
func (k WakerKind) String() string { return string(k) }

// MarshalText writes the name.
func (k WakerKind) MarshalText() ([]byte, error) { return []byte(k), nil }

// UnmarshalText reads a name.
func (k *WakerKind) UnmarshalText(b []byte) error { *k = WakerKind(b); return nil }

// Reason says why a task slept (sleep events, from SleepReason; the
// analysis adds the ones without a sleep event) or, in a stack sample, that
// user space was interrupted. Immutable: safe for concurrent use.
type Reason string

// Reasons.
const (
	ReasonRTLock           Reason = "rtlock wait (PREEMPT_RT sleeping spinlock)"
	ReasonPIFutex          Reason = "PI futex lock"
	ReasonFutexWait        Reason = "futex wait"
	ReasonFutexWaitTimeout Reason = "futex wait with timeout"
	ReasonNanosleep        Reason = "timer sleep (nanosleep)"
	ReasonTimerfd          Reason = "timerfd read"
	ReasonEpoll            Reason = "epoll wait"
	ReasonPoll             Reason = "poll/select wait"
	ReasonEventfd          Reason = "eventfd read"
	ReasonPipe             Reason = "pipe"
	// Named by the kernel at the blocking sleeps it walks (SleepReasons, rts_sleep_named).
	ReasonPipeWrite     Reason = "pipe write (pipe full)"
	ReasonPipeRead      Reason = "pipe read (pipe empty)"
	ReasonSockSend      Reason = "socket send (buffer full)"
	ReasonSockRecv      Reason = "socket receive"
	ReasonSockOther     Reason = "socket (accept, connect or socket lock)"
	ReasonIO            Reason = "I/O wait"
	ReasonPageFault     Reason = "page fault"
	ReasonRwsem         Reason = "kernel rw semaphore"
	ReasonSignal        Reason = "waiting for a signal"
	ReasonTTY           Reason = "terminal I/O"
	ReasonCompletion    Reason = "kernel completion"
	ReasonKernelMutex   Reason = "kernel mutex"
	ReasonChild         Reason = "waiting for a child"
	ReasonIRQThreadIdle Reason = "IRQ thread idle"
	ReasonTimerSleep    Reason = "timer sleep"
	ReasonNoStack       Reason = "sleep (no stack sample)"
	// ReasonSleep: blocked, with neither a sleep event nor a state.
	ReasonSleep Reason = "sleep"
	// ReasonUserSpace: a stack sample that found the task in user space.
	ReasonUserSpace Reason = "user space"
)

// ReasonOtherWait is a sleep no other reason covers, named by the innermost
// frame of its stack.
func ReasonOtherWait(frame string) Reason { return Reason("other wait (" + frame + ")") }

// ReasonInState is a block known only from its switch-out's state letters.
func ReasonInState(letters string) Reason { return Reason("sleep (state " + letters + ")") }

// String returns the reason's text.
func (r Reason) String() string { return string(r) }

// MarshalText writes the text.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r), nil }

// UnmarshalText reads a text.
func (r *Reason) UnmarshalText(b []byte) error { *r = Reason(b); return nil }

// FutexWait tells a futex wait without priority inheritance, with or
// without a timeout: the waits that can invert priorities.
func (r Reason) FutexWait() bool { return r == ReasonFutexWait || r == ReasonFutexWaitTimeout }

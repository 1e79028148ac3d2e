package isolation

// Snapshot is what a run counted on the watched CPUs, names resolved:
// Analyze's input, and the recorded fixtures' content.
type Snapshot struct {
	DurationNs uint64        `json:"duration_ns"`
	CPUs       []int         `json:"cpus"`   // watched
	Online     []int         `json:"online"` // every online CPU
	Isolated   []int         `json:"isolated,omitempty"`
	NohzFull   []int         `json:"nohz_full,omitempty"`
	Allow      []string      `json:"allow,omitempty"` // --allow COMMs
	IPIs       []IPIRow      `json:"ipis,omitempty"`
	IRQs       []IRQRow      `json:"irqs,omitempty"`
	Softirqs   []SoftirqRow  `json:"softirqs,omitempty"`
	Works      []WorkRow     `json:"works,omitempty"`
	Queued     []QueueRow    `json:"queued,omitempty"`
	Tasks      []TaskRow     `json:"tasks,omitempty"`
	Steal      []StealRow    `json:"steal,omitempty"`
	Ticks      []TickRow     `json:"ticks,omitempty"`
	Timers     []TimerRow    `json:"timers,omitempty"`
	TimerArms  []TimerArmRow `json:"timer_arms,omitempty"`
	Lost       uint64        `json:"lost,omitempty"` // entries a full map refused
	// Missing: the tracepoints this kernel lacks, whose hooks were not attached.
	Missing []string `json:"missing,omitempty"`
	// Engine counted it: "btf" or "classic" (docs/isolation.md, engines);
	// EngineNote says why classic, EngineLimits what it cannot see.
	Engine       string   `json:"engine,omitempty"`
	EngineNote   string   `json:"engine_note,omitempty"`
	EngineLimits []string `json:"engine_limits,omitempty"`
	// self: the process whose IPIs are left out (rtscope: attaching and
	// detaching its programs patches kernel text, which calls every CPU,
	// do_sync_core, 114 times on CPU 1 in an ipi-storm run); 0: none.
	self uint32
}

// Time is a count of events, their total and their worst duration.
type Time struct {
	Count uint64 `json:"count"`
	Ns    uint64 `json:"ns"`
	MaxNs uint64 `json:"max_ns"`
}

func (t *Time) add(o Time) {
	t.Count += o.Count
	t.Ns += o.Ns
	t.MaxNs = max(t.MaxNs, o.MaxNs)
}

// IPIRow is the IPIs of one kind one sender caused on a CPU (SenderTID 0:
// received with no send seen).
type IPIRow struct {
	CPU       int    `json:"cpu"`
	Kind      string `json:"kind"` // IPI kind noun (kindNames)
	SenderTID uint32 `json:"sender_tid"`
	SenderPID uint32 `json:"sender_pid"`
	SenderCPU int    `json:"sender_cpu"`
	Comm      string `json:"comm"`
	Func      string `json:"function,omitempty"`
	Callsite  string `json:"callsite,omitempty"`
	Time
}

// IRQRow is a device IRQ handled on a CPU, with its affinity settings.
type IRQRow struct {
	CPU       int    `json:"cpu"`
	IRQ       int    `json:"irq"`
	Name      string `json:"name"`
	Affinity  string `json:"smp_affinity_list"`
	Effective string `json:"effective_affinity_list"`
	Time
}

// SoftirqRow is one softirq vector run on a CPU; Raised counts its raises there.
type SoftirqRow struct {
	CPU    int    `json:"cpu"`
	Vector string `json:"vector"`
	Raised uint64 `json:"raised"`
	Time
}

// WorkRow is a work function run on a CPU.
type WorkRow struct {
	CPU  int    `json:"cpu"`
	Func string `json:"function"`
	Time
}

// QueueRow is work queued onto a CPU by a task (of another CPU, or its own).
type QueueRow struct {
	CPU     int    `json:"cpu"`
	Func    string `json:"function"`
	TID     uint32 `json:"tid"`
	PID     uint32 `json:"pid"`
	Comm    string `json:"comm"`
	FromCPU int    `json:"from_cpu"`
	Count   uint64 `json:"count"`
}

// TaskRow is a task that ran on a CPU: Count switch-outs, Ns run time.
type TaskRow struct {
	CPU     int    `json:"cpu"`
	TID     uint32 `json:"tid"`
	PID     uint32 `json:"pid"`
	Comm    string `json:"comm"`
	Kthread bool   `json:"kthread"`
	PerCPU  bool   `json:"per_cpu"` // allowed on one CPU only
	Time
}

// StealRow is a CPU's hypervisor steal during the run (/proc/stat).
type StealRow struct {
	CPU int    `json:"cpu"`
	Ns  uint64 `json:"ns"`
}

// TickRow is a nohz_full CPU's tick_stop outcomes (Kept by dependency),
// and what the kernel says of its tick outside those events (tick.go):
// stopped or not at the run's start and end (/proc/timer_list), and the
// local timer interrupts in between (/proc/interrupts). Nil: not known.
type TickRow struct {
	CPU     int               `json:"cpu"`
	Stopped uint64            `json:"stopped"`
	Kept    uint64            `json:"kept"`
	Deps    map[string]uint64 `json:"deps,omitempty"`
	// StoppedAtStart and StoppedAtEnd: the tick stopped at the run's start
	// and end (/proc/timer_list, nohz_full CPUs; nil: unknown); TimerIRQs:
	// the local timer interrupts in between (/proc/interrupts).
	StoppedAtStart *bool   `json:"stopped_at_start,omitempty"`
	StoppedAtEnd   *bool   `json:"stopped_at_end,omitempty"`
	TimerIRQs      *uint64 `json:"timer_irqs,omitempty"`
	// Fired: the tick's own hrtimer (tick_nohz_handler) run on the CPU.
	Fired Time `json:"fired,omitzero"`
}

// TimerRow is a timer function expired on a CPU. BaseCPU is the CPU whose
// timer base it was on: another one when timer migration expired an idle
// CPU's wheel timer here.
type TimerRow struct {
	CPU     int    `json:"cpu"`
	Func    string `json:"function"`
	Kind    string `json:"kind"` // hrtimer, soft hrtimer, timer (the timer wheel)
	BaseCPU int    `json:"base_cpu"`
	Time
}

// TimerArmRow is a timer armed for a watched CPU by a task on FromCPU
// (the same CPU: a task of that CPU arming its own timers).
type TimerArmRow struct {
	CPU     int    `json:"cpu"`
	Func    string `json:"function"`
	Kind    string `json:"kind"`
	TID     uint32 `json:"tid"`
	PID     uint32 `json:"pid"`
	Comm    string `json:"comm"`
	FromCPU int    `json:"from_cpu"`
	Count   uint64 `json:"count"`
}

package engine

import (
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/rtscope/rtscope/internal/metric"
)

// Exported mirrors of the BPF types.
type (
	Event  = bpfRtsEvent
	Notice = bpfRtsNotice
)

// NoticeFlagSLOViolated marks a notice whose sample is over its SLO (new maxima too).
const NoticeFlagSLOViolated = 1

// ViolationNoticeGap is the kernel's minimum spacing of one task's
// SLO-violation notices (RTS_VIOL_NOTICE_GAP_NS).
const ViolationNoticeGap = 1_000_000

// Target flags (RTS_TF_*).
const FlagFollow = 1

// Config is set before the programs are loaded.
type Config struct {
	Trace        bool                            // flight recorder + worst-case windows
	SleepStacks  bool                            // kernel stack of each tracked sleep
	StackMinWait uint64                          // ns a task waits before the stack of what runs instead is taken
	FlightPerCPU uint32                          // events kept per CPU, power of two
	SLODefault   [metric.Count]uint64            // bounds for all targets, ns (0: none)
	SLOByID      map[uint32][metric.Count]uint64 // by tid or pid
	// WarmUp is each task's start-up, whose samples are left out of its
	// metrics: 0 detects it (its loop metrics count once its period
	// settles), > 0 leaves out every sample of its first WarmUp after
	// tracking (--warm-up), < 0 leaves out nothing.
	WarmUp time.Duration
	// ViolationNotices: notice SLO violations without the flight recorder
	// too (rate-limited, as with it), for on-threshold actions. Trace
	// implies them: their windows are explained.
	ViolationNotices bool
	// TestStorageBusy (tests only): the first N task-storage creations
	// fail as if the kernel's task-storage lock were busy, which
	// preemptible kernels do at random (rts_storage_busy, compat.bpf.h).
	TestStorageBusy uint32
	// TestStatsNoMem (tests only): the first N insertions into the
	// statistics hash fail as if its per-CPU cache were empty, which a
	// PREEMPT_RT kernel does when real-time tasks starve its refill
	// (RTS_E2BIG, compat.bpf.h).
	TestStatsNoMem uint32
	// TestNoPercpuLookup (tests only) loads as on a kernel without
	// bpf_map_lookup_percpu_elem (before 5.19).
	TestNoPercpuLookup bool
	// TestNoReapply (tests only) loads as on a kernel without
	// bpf_for_each_map_elem (before 5.13).
	TestNoReapply bool
	// TestInlineVariant (tests only) loads the inlined variant of the
	// programs, as on a kernel before 5.12 (FeatureGlobalPtrArgs).
	TestInlineVariant bool
	// Engine is EngineAuto, EngineBTF or EngineClassic (--engine).
	Engine string
	// BTFFile (--btf FILE): the kernel's types from this file, for the
	// BTF engine where /sys/kernel/btf/vmlinux does not show them
	// (LoadBTFFile).
	BTFFile string
	// IPI attaches the IPI hooks (--ipi; FeatureIPISend,
	// FeatureIPIReceive): sends and receipts in the flight recorder,
	// counted by CPU, kind, receiver and sender (IPIs).
	IPI bool
}

// DefaultStackMinWait is how long a tracked task waits for its CPU before
// the kernel stack of what runs instead is taken. The walk runs before the
// task can and costs it 1 to 20 us (20 us measured on a VM with cold caches:
// tracked, cyclictest's p99 grew from 38 to 67 us), so on-time releases and
// short waits go without; a wait worth explaining has its stack.
const DefaultStackMinWait = 100_000

// The flight recorder depth per CPU (48 bytes an event): its default and
// limits, checked by CheckFlightPerCPU (the one home of both).
const (
	DefaultFlightPerCPU = 8192
	MinFlightPerCPU     = 64
	MaxFlightPerCPU     = 1 << 20
)

// DefaultFlightBytes is the default flight recorder's kernel memory on
// machines of more than two possible CPUs: the depth per CPU is halved as
// the CPUs double (DefaultFlightFor), so that 100 tracked tasks on 4 CPUs
// stay within 2 MiB of kernel memory (issue 12), down to
// MinDefaultFlightPerCPU.
const (
	DefaultFlightBytes     = 2 * DefaultFlightPerCPU * 48
	MinDefaultFlightPerCPU = 2048
)

// DefaultFlightFor is the default depth per CPU for ncpu possible CPUs:
// DefaultFlightPerCPU up to 2 CPUs, then the largest power of two that
// keeps the rings within DefaultFlightBytes, at least
// MinDefaultFlightPerCPU.
func DefaultFlightFor(ncpu int) uint32 {
	n := uint32(DefaultFlightPerCPU)
	for n > MinDefaultFlightPerCPU && uint64(n)*uint64(max(ncpu, 1))*uint64(unsafe.Sizeof(Event{})) > DefaultFlightBytes {
		n /= 2
	}
	return n
}

// MaxFlightBytes caps the flight recorder's kernel memory, all possible
// CPUs together: a ring per possible CPU, not per online one, so that a
// large --trace-events on a machine with many possible CPUs is refused
// rather than taking gigabytes.
const MaxFlightBytes = 1 << 30

// flightEntries is the flight recorder's size in events for ncpu possible
// CPUs of perCPU events, or why that is too much (computed in 64 bits: the
// map's entry count is 32 bits wide).
func flightEntries(ncpu int, perCPU uint32) (uint32, error) {
	const event = uint64(unsafe.Sizeof(Event{}))
	total := uint64(ncpu) * uint64(perCPU)
	if total*event <= MaxFlightBytes {
		return uint32(total), nil
	}
	most := uint64(MinFlightPerCPU)
	for most*2*uint64(ncpu)*event <= MaxFlightBytes {
		most *= 2
	}
	return 0, fmt.Errorf("the flight recorder of %d events per CPU on %d possible CPUs would take %d MiB of kernel memory, above the %d MiB limit: use --trace-events %d or less",
		perCPU, ncpu, total*event>>20, MaxFlightBytes>>20, most)
}

// CheckFlightPerCPU says why n cannot be the flight recorder's depth per
// CPU: it must be a power of two from MinFlightPerCPU to MaxFlightPerCPU.
func CheckFlightPerCPU(n uint32) error {
	if n < MinFlightPerCPU || n > MaxFlightPerCPU || n&(n-1) != 0 {
		return fmt.Errorf("%d must be a power of two from %d to %d", n, MinFlightPerCPU, MaxFlightPerCPU)
	}
	return nil
}

// Engine is a loaded and attached set of rtscope programs, of either
// engine: what differs between them is its backend.
type Engine struct {
	cfg  Config
	back backend     // the BTF or the classic engine's loading, attaching and scanning
	objs coreObjects // the maps and the task iterator, taken out of core
	// core is the collection of the hooks that every measurement needs
	// (the BTF engine's tp_btf programs with this kernel's sched_switch
	// variant, or the classic engine's whole object): its programs are the
	// one list that Attach and programs read.
	core *ebpf.Collection
	// optional are the BTF engine's optional program sets, each loaded on
	// its own and sharing core's maps: a missing kernel function costs its
	// feature, not the engine.
	optional []*ebpf.Collection
	reapply  *ebpf.Collection     // reapply_slo (and the classic settle_held), loaded on their own; nil: SLOReapply says why
	maps     map[string]*ebpf.Map // the core maps by name, which programs loaded later share
	links    []link.Link
	// noticeMu guards notices, queued and carries: Stats and AllStats
	// take the notices queued to find their histograms' carries, which
	// Notices would otherwise take.
	noticeMu sync.Mutex
	notices  *ringbuf.Reader
	queued   []Notice    // notices taken by Stats, for the next Notices
	carries  histCarries // histogram carries by tracking id
	flight   []byte
	ncpu     int
	// headMu guards heads, each CPU's flight ring head when Heads last
	// read it: where the next search starts.
	headMu sync.Mutex
	heads  []uint64
	// statsBufMu guards eachStats' batch buffers, kept between calls
	// (640 KB).
	statsBufMu sync.Mutex
	statsKeys  []uint64
	statsVals  []bpfRtsTaskStats
	types      *KernelTypes // --btf, else nil
	// btfCache holds the kernel's types once for every collection the
	// engine loads (core, each optional set, reapply; timerlat's beside
	// it): without it cilium/ebpf decoded /sys/kernel/btf/vmlinux and
	// listed the modules' BTF again for each, 6 times a start.
	btfCache *btf.Cache
	Features Features
	mem      *memoryLayout // MemoryBytes' maps and programs, read once
	// The classic engine's identities read from live tasks (classic.go).
	identMu sync.Mutex
	ident   map[uint64]classicIdent // by tracking id
}

// coreObjects are what Assign takes out of the core collection: the maps
// every reader uses, and the BTF engine's task iterator (run by Scan, not
// attached). The hooks stay in the collection.
type coreObjects struct {
	TrackExisting *ebpf.Program `ebpf:"track_existing"`
	// UntrackExisting ends the tracking of a removed target's tasks
	// (Untrack), the target's index in UntrackTarget.
	UntrackExisting *ebpf.Program  `ebpf:"untrack_existing"`
	UntrackTarget   *ebpf.Variable `ebpf:"untrack_target"`
	// SettleHeld settles what every tracked task holds back (Detach).
	SettleHeld *ebpf.Program `ebpf:"settle_held"`
	// WantCgroups counts want_cgroup's entries (fork and exec skip the
	// cgroup walk while it is 0).
	WantCgroups *ebpf.Variable `ebpf:"want_cgroups"`
	bpfMaps
}

// CommString converts a kernel comm array to a string.
func CommString(c [16]int8) string {
	b := make([]byte, 0, 16)
	for _, ch := range c {
		if ch == 0 {
			break
		}
		b = append(b, byte(ch))
	}
	return string(b)
}

// EventX and EventY read the two 64-bit words that share the comm field of
// an event (timer function and expiry, armed expiry).
func EventX(e *Event) uint64 { return *(*uint64)(unsafe.Pointer(&e.Comm[0])) }

// EventY: see EventX.
func EventY(e *Event) uint64 { return *(*uint64)(unsafe.Pointer(&e.Comm[8])) }

// timerFlagSlack is RTS_EVF_SLACK (rtscope.h, a #define bpf2go does not
// export): the flag of a timer entry or arming that carries its slack.
const timerFlagSlack = 2

// EventSlack is the slack of a timer entry (A, saturated at 2^32-1 ns) or
// of a sleeper timer's arming (Y): its hard expiry minus its soft one, the
// range the kernel may fire it in. ok is false when the engine did not
// know it (the classic engine saw no arming, or another event type).
func EventSlack(e *Event) (ns uint64, ok bool) {
	if e.Flags&timerFlagSlack == 0 {
		return 0, false
	}
	switch e.Type {
	case EventTimerEntry:
		return uint64(e.A), true
	case EventTimerArm:
		return EventY(e), true
	}
	return 0, false
}

// EventStackID is the stack id of a sleep (B) or stack event (C, 16
// bits: 0xffff is none), -1 when none was taken or for another type.
func EventStackID(e *Event) int32 {
	switch e.Type {
	case EventSleep:
		return int32(e.B)
	case EventStack:
		return int32(int16(e.C))
	}
	return -1
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// Identity is a policy and normal kernel priority a task ran with.
type Identity struct {
	Policy uint32
	Prio   int // kernel priority: 0..98 RT, 100..139 normal, -1 deadline
}

// SchedSeen returns the identities s's task was seen with, in the order
// first seen (at most RTS_SCHED_SEEN: a task that changed more often
// shows its first ones; SchedChanges counts them all).
func SchedSeen(s *TaskStats) []Identity {
	var ids []Identity
	for _, k := range s.SchedSeen {
		if k == 0 {
			break
		}
		// rts_sched_key: 1<<31 | policy<<8 | normal prio byte (255: -1).
		id := Identity{Policy: k >> 8 & 0xff, Prio: int(k & 0xff)}
		if id.Prio == 255 {
			id.Prio = -1
		}
		ids = append(ids, id)
	}
	return ids
}

// warmUpDetect is RTS_WARM_UP_DETECT: the start-up is detected.
const warmUpDetect = ^uint64(0)

// warmUpNs is the warm_up_ns setting of Config.WarmUp.
func warmUpNs(d time.Duration) uint64 {
	switch {
	case d == 0:
		return warmUpDetect
	case d < 0:
		return 0
	}
	return uint64(d)
}

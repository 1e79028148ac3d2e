package trace

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/sched"
)

// Event types (enum rts_event_type, generated into engine).
const (
	evSwitch       = engine.EventSwitch
	evWakeup       = engine.EventWakeup
	evMigrate      = engine.EventMigrate
	evIRQEntry     = engine.EventIRQEntry
	evIRQExit      = engine.EventIRQExit
	evSoftirqEntry = engine.EventSoftirqEntry
	evSoftirqExit  = engine.EventSoftirqExit
	evTimerEntry   = engine.EventTimerEntry
	evTimerExit    = engine.EventTimerExit
	evSleep        = engine.EventSleep
	evUserReturn   = engine.EventUserReturn
	evHandlerEntry = engine.EventHandlerEntry
	evHandlerExit  = engine.EventHandlerExit
	evExit         = engine.EventExit
	evStack        = engine.EventStack
	evSteal        = engine.EventSteal
	evTimerArm     = engine.EventTimerArm
	evFaults       = engine.EventFaults
	evNoise        = engine.EventNoise
	evNMI          = engine.EventNMI
	evIPISend      = engine.EventIPISend
	evIPIEntry     = engine.EventIPIEntry
	evIPIExit      = engine.EventIPIExit
)

var typeNames = map[uint8]EventType{
	evSwitch: EventSwitch, evWakeup: EventWakeup, evMigrate: EventMigrate, evIRQEntry: EventIRQEntry,
	evIRQExit: EventIRQExit, evSoftirqEntry: EventSoftirqEntry, evSoftirqExit: EventSoftirqExit,
	evTimerEntry: EventTimerEntry, evTimerExit: EventTimerExit, evSleep: EventSleep,
	evUserReturn: EventUserReturn, evHandlerEntry: EventHandlerEntry, evHandlerExit: EventHandlerExit,
	evExit: EventExit, evStack: EventStack, evSteal: EventSteal, evTimerArm: EventTimerArm, evFaults: EventFaults,
	evIPISend: EventIPISend, evIPIEntry: EventIPIEntry, evIPIExit: EventIPIExit, evNoise: EventNoise,
	evNMI: EventNMI,
}

// NoiseCauses name the causes of a noise interval's parts (enum
// rts_noise_cause: engine.NoiseTop and NoiseMask of a noise event).
var NoiseCauses = map[uint8]NoiseCause{
	engine.NoiseIRQ: NoiseIRQ, engine.NoiseTimer: NoiseTimer, engine.NoiseSoftirq: NoiseSoftirq,
	engine.NoisePreempt: NoisePreempt, engine.NoiseThrottle: NoiseThrottle, engine.NoiseSteal: NoiseSteal,
	engine.NoiseIPI: NoiseIPI, engine.NoiseNMI: NoiseNMI,
}

// x86IPIVectors are the kinds of x86's IPI vectors (ipi.bpf.h's
// RTS_X86_*_VECTOR), an IPI noise part's who on x86; on arm64 it is the
// engine's IPI kind itself (all below these).
var x86IPIVectors = map[uint32]IPIKind{0xfd: IPIResched, 0xfc: IPICall, 0xfb: IPICall, 0xf6: IPIIRQWork}

// noiseIPIKind names an IPI noise part's kind from its who.
func noiseIPIKind(who uint32) IPIKind {
	if k, ok := x86IPIVectors[who]; ok {
		return k
	}
	return IPIKindOf(uint8(who))
}

// ipiKinds name the engine's IPI kinds (enum rts_ipi_kind).
var ipiKinds = map[uint8]IPIKind{
	engine.IPICall: IPICall, engine.IPITLB: IPITLB, engine.IPIResched: IPIResched,
	engine.IPIIRQWork: IPIIRQWork, engine.IPIWakeup: IPIWakeup,
}

// IPIKindOf names an engine IPI kind ("kindN" when this build does not know it).
func IPIKindOf(k uint8) IPIKind {
	if n, ok := ipiKinds[k]; ok {
		return n
	}
	return IPIKind(fmt.Sprintf("kind%d", k))
}

// SleepReasons name the kernel's sleep reasons (enum rts_sleep_reason,
// the flags of a sleep event).
var SleepReasons = map[uint8]Reason{
	engine.SleepPipeWrite: ReasonPipeWrite, engine.SleepPipeRead: ReasonPipeRead,
	engine.SleepSockSend: ReasonSockSend, engine.SleepSockRecv: ReasonSockRecv, engine.SleepSockOther: ReasonSockOther,
	engine.SleepFutex: ReasonFutexWait, engine.SleepFutexPI: ReasonPIFutex,
	engine.SleepEpoll: ReasonEpoll, engine.SleepPoll: ReasonPoll, engine.SleepNanosleep: ReasonNanosleep,
	engine.SleepIO: ReasonIO, engine.SleepPageFault: ReasonPageFault, engine.SleepMutex: ReasonKernelMutex,
	engine.SleepRwsem: ReasonRwsem, engine.SleepEventfd: ReasonEventfd, engine.SleepTimerfd: ReasonTimerfd,
	engine.SleepChild: ReasonChild, engine.SleepSignal: ReasonSignal, engine.SleepTTY: ReasonTTY,
	engine.SleepCompletion: ReasonCompletion, engine.SleepRTLock: ReasonRTLock, engine.SleepIRQThread: ReasonIRQThreadIdle,
}

// Waker contexts (enum rts_waker_ctx, generated into engine).
const (
	wakerTask    = engine.WakerTask
	wakerHardIRQ = engine.WakerHardIRQ
	wakerSoftIRQ = engine.WakerSoftIRQ
	wakerTimer   = engine.WakerTimer
)

// SoftirqNames are the kernel's softirq vectors.
var SoftirqNames = []string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}

// StackFunc resolves a stack id of the engine's stack map to addresses.
type StackFunc func(id uint32) ([]uint64, error)

// CommsPerGeneration bounds the comms Names remembers: it keeps the
// current generation and the one before (at most twice this many tids).
// Without a bound the agent remembered every tid it ever saw in a ring, up
// to pid_max (32,768 here, 4,194,304 under systemd), and grew under task
// churn (make soak: +3.8 MB RSS in 10 minutes). One ring snapshot names a
// few hundred tids (8192 events a CPU), so two generations of 8192 keep
// every name a window being decoded needs.
const CommsPerGeneration = 8192

// Names resolves tids, IRQ lines, timer functions and stacks to names. It
// learns comms from the events it sees, so tasks that exited recently still
// have names (CommsPerGeneration bounds how many it remembers). Not safe for
// concurrent use: the session's goroutine owns it.
type Names struct {
	// comms of the current generation of tids, and of the one before; a
	// tid found in old is copied into comms (recently seen tids stay).
	comms, old map[uint32]string
	perGen     int // CommsPerGeneration; smaller in tests
	irqs       map[int]string
	syms       *ksym.Table
	stack      StackFunc
	reloaded   time.Time
	// prefetched: a re-read of /proc/kallsyms started off the session's
	// goroutine (PrefetchSyms), taken by the first re-read Func needs.
	prefetched chan *ksym.Table
	// settled: addresses a reload of kallsyms did not rename (an offset
	// into a program already listed): they never cause another one. Without
	// it, any BPF frame in a stack re-read kallsyms once a second, about 5%
	// of a CPU at 1000 tracked threads.
	settled map[uint64]bool
	pinned  map[uint32][]string // while decoding a Raw window
	// learnt caches the comm learnt last of each tid (by its low bits),
	// as comms holds it: consecutive events name the same few tasks, and
	// a map lookup for every event learnt was most of a poll's CPU
	// (BenchmarkPollSnapshot: 80 ns an event, 5 with the cache). setComm
	// invalidates an entry it changes, and all at a new generation.
	learnt [256]learntComm
}

// learntComm is an entry of Names.learnt.
type learntComm struct {
	ok   bool
	tid  uint32
	comm [16]int8
}

// NewNames makes a resolver; syms and stack may be nil.
func NewNames(syms *ksym.Table, stack StackFunc) *Names {
	return &Names{comms: map[uint32]string{}, perGen: CommsPerGeneration, irqs: readIRQNames("/proc/interrupts"), syms: syms, stack: stack}
}

// SetComm records a known comm (e.g. of a tracked task).
func (n *Names) SetComm(tid uint32, comm string) {
	if n != nil && comm != "" {
		n.setComm(tid, comm)
	}
}

// setComm records tid's comm in the current generation, starting a new
// one (and dropping the oldest) when the current one is full.
func (n *Names) setComm(tid uint32, comm string) {
	if l := &n.learnt[tid&255]; l.tid == tid {
		l.ok = false
	}
	if c, ok := n.comms[tid]; ok {
		if c != comm {
			n.comms[tid] = comm
		}
		return
	}
	if len(n.comms) >= n.perGen {
		n.old, n.comms = n.comms, make(map[uint32]string, n.perGen)
		n.learnt = [256]learntComm{} // what it knew is old now: to be copied into comms when seen
	}
	n.comms[tid] = comm
}

// comm returns tid's remembered comm.
func (n *Names) comm(tid uint32) (string, bool) {
	if c, ok := n.comms[tid]; ok {
		return c, true
	}
	if c, ok := n.old[tid]; ok {
		n.setComm(tid, c)
		return c, true
	}
	return "", false
}

// remembered is the number of tids whose comm n keeps (tests).
func (n *Names) remembered() int { return len(n.comms) + len(n.old) }

func (n *Names) learnOnly(e *engine.Event) {
	if n == nil {
		return
	}
	switch e.Type {
	case evSwitch:
		n.learnComm(e.B, &e.Comm)
	case evWakeup:
		if e.Flags == wakerTask {
			n.learnComm(e.B, &e.Comm)
		}
	case evIPISend:
		n.learnComm(e.A, &e.Comm)
	}
}

// learnComm is setComm of an event's comm, without making a string when
// tid's is known already and the same (nearly always: at 1000 tracked
// threads under load, the string of every event learnt was most of the
// monitor's allocations).
func (n *Names) learnComm(tid uint32, c *[16]int8) {
	l := &n.learnt[tid&255]
	if l.ok && l.tid == tid && l.comm == *c {
		return
	}
	if cur, ok := n.comms[tid]; !ok || !commIs(cur, c) {
		n.setComm(tid, engine.CommString(*c))
	}
	*l = learntComm{ok: true, tid: tid, comm: *c}
}

// commIs tells whether s is the kernel comm c (NUL-terminated, or 16 bytes).
func commIs(s string, c *[16]int8) bool {
	for i, ch := range c {
		if ch == 0 {
			return i == len(s)
		}
		if i >= len(s) || s[i] != byte(ch) {
			return false
		}
	}
	return len(s) == len(c)
}

// Comm returns the name of tid: from events, else /proc, else "?".
func (n *Names) Comm(tid uint32) string {
	if tid == 0 {
		return "idle"
	}
	if n != nil {
		if c, ok := n.comm(tid); ok {
			return c
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", tid)); err == nil {
		c := strings.TrimSpace(string(b))
		if n != nil {
			n.setComm(tid, c)
		}
		return c
	}
	return "?"
}

// PrefetchSyms starts re-reading /proc/kallsyms in the background, for
// the first re-read Func needs: the table was read before the engine's
// programs were loaded, so the first stack taken in one of them (a frame
// at an offset past the last program listed) re-read it in the session's
// goroutine. That took 310-1280 ms under stress-ng --switch 4 on 2 CPUs,
// in the poll that cuts the first windows, and the notices queued behind
// it were read after the flight recorder had lapped past their windows:
// all of the traces truncated there (bench/results, 2026-11-28 cost).
// Call it once the programs are loaded.
func (n *Names) PrefetchSyms() {
	if n == nil || n.syms == nil || n.prefetched != nil {
		return
	}
	ch := make(chan *ksym.Table, 1)
	n.prefetched = ch
	go func() {
		t, err := ksym.Load("/proc/kallsyms")
		if err != nil {
			t = nil
		}
		ch <- t
	}()
}

// reload re-reads the symbol table in place (Func): the prefetched
// table the first time, waiting for it if it is still being read.
func (n *Names) reload() bool {
	if n.prefetched != nil {
		t := <-n.prefetched
		n.prefetched = nil
		if t != nil {
			*n.syms = *t
			return true
		}
	}
	return n.syms.Reload("/proc/kallsyms") == nil
}

// IRQName returns the action name of an IRQ line from /proc/interrupts.
func (n *Names) IRQName(irq int) string {
	if n == nil {
		return ""
	}
	return n.irqs[irq]
}

// kallsymsReloadEvery spaces re-reads of /proc/kallsyms for BPF programs
// loaded after rtscope started: each takes about 50-100 ms of CPU (200,000
// lines), and at 1000 tracked threads under load, reloading once a second
// for each new address took a fifth of rtscope's CPU (perf).
const kallsymsReloadEvery = 30 * time.Second

// Func symbolises a kernel text address. An address in BPF program space
// may belong to a program loaded since the table was read: the table is then
// re-read (at most once every kallsymsReloadEvery, once per address).
func (n *Names) Func(addr uint64) string {
	if n == nil || n.syms == nil {
		return fmt.Sprintf("0x%x", addr)
	}
	name := n.syms.Name(addr)
	if strings.HasPrefix(name, "bpf_prog_") && strings.Contains(name, "+") && !n.settled[addr] && time.Since(n.reloaded) > kallsymsReloadEvery {
		n.reloaded = time.Now()
		if n.reload() {
			name = n.syms.Name(addr)
		}
		if n.settled == nil {
			n.settled = map[uint64]bool{}
		}
		n.settled[addr] = true
	}
	if i := strings.IndexByte(name, '+'); i > 0 {
		return name[:i]
	}
	return name
}

func readIRQNames(path string) map[int]string {
	out := map[int]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close() //nolint:errcheck // read-only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	ncpu := 0
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if ncpu == 0 {
			ncpu = len(fields) // header: CPU0 CPU1 ...
			continue
		}
		if len(fields) < 2 {
			continue
		}
		irq, err := strconv.Atoi(strings.TrimSuffix(fields[0], ":"))
		if err != nil {
			continue
		}
		// irq: counts... chip hwirq-type name[, name]
		rest := fields[1:]
		if len(rest) > ncpu {
			rest = rest[ncpu:]
		}
		if len(rest) >= 3 {
			out[irq] = strings.Join(rest[2:], " ")
		} else if len(rest) > 0 {
			out[irq] = rest[len(rest)-1]
		}
	}
	return out
}

func intp(v int) *int { return &v }

// decode turns an engine event into a readable one: names, scheduling and
// times relative to start (the window's).
func (n *Names) decode(e engine.Event, start uint64) Event {
	ev := Event{T: int64(e.Ts) - int64(start), TS: e.Ts, CPU: int(e.Cpu), Type: typeNames[e.Type]}
	if ev.Type == "" {
		ev.Type = EventType(fmt.Sprintf("type%d", e.Type))
	}
	switch e.Type {
	case evSwitch:
		n.decodeSwitch(&ev, &e)
	case evWakeup:
		ev.TID, ev.Comm = e.A, n.Comm(e.A)
		ev.KPrio = sched.KPrioFromByte(e.PrioA)
		ev.Sched = sched.Describe(uint32(e.PolA), ev.KPrio)
		ev.TargetCPU = intp(int(e.C))
		ev.Waker = n.decodeWaker(&ev, &e, start)
	case evMigrate:
		ev.TID, ev.Comm = e.A, n.Comm(e.A)
		ev.FromCPU, ev.ToCPU = intp(int(e.B)), intp(int(e.C))
	case evIRQEntry, evIRQExit:
		ev.IRQ, ev.IRQName = intp(int(e.A)), n.IRQName(int(e.A))
	case evSoftirqEntry, evSoftirqExit:
		ev.Vec = intp(int(e.A))
		if int(e.A) < len(SoftirqNames) {
			ev.VecName = SoftirqNames[e.A]
		}
	case evTimerEntry, evTimerExit:
		ev.Function = n.Func(engine.EventX(&e))
		ev.HardIRQ = e.Flags&1 == 1
		if e.Type == evTimerEntry {
			exp := int64(engine.EventY(&e)) - int64(start)
			ev.ExpiryT = &exp
			ev.SlackNs = slackOf(&e)
		}
	case evSleep:
		n.decodeSleep(&ev, &e, start)
	case evStack:
		ev.TID, ev.Comm = e.A, engine.CommString(e.Comm)
		ev.WaitingTID = e.B
		if frames := n.frames(uint32(engine.EventStackID(&e))); frames != nil {
			ev.Stack = InterruptedFrames(frames)
			if len(ev.Stack) == 0 {
				ev.Reason = ReasonUserSpace
			}
		}
	case evSteal:
		ev.StealNs = engine.EventX(&e)
		since := int64(engine.EventY(&e)) - int64(start)
		ev.SinceT = &since
	case evFaults:
		ev.TID, ev.Comm = e.A, n.Comm(e.A)
		ev.MinorFaults, ev.MajorFaults = e.B, uint32(min(engine.EventY(&e), math.MaxUint32))
		if x := engine.EventX(&e); x != 0 {
			since := int64(x) - int64(start)
			ev.SinceT = &since
		}
	case evNoise:
		decodeNoise(&ev, &e, start, n)
	case evUserReturn, evExit:
		ev.TID, ev.Comm = e.A, n.Comm(e.A)
	case evTimerArm:
		ev.TID, ev.Comm = e.A, n.Comm(e.A)
		if engine.EventX(&e) != 0 {
			exp := int64(engine.EventX(&e)) - int64(start)
			ev.ExpiryT = &exp
		}
		ev.Missed = e.Flags&1 == 1
		ev.SlackNs = slackOf(&e)
	case evHandlerEntry, evHandlerExit:
		ev.TID, ev.Comm = e.A, n.Comm(e.A)
		ev.IRQ, ev.IRQName = intp(int(e.B)), n.IRQName(int(e.B))
	case evIPISend, evIPIEntry, evIPIExit:
		n.decodeIPI(&ev, &e)
	case evNMI:
		ev.Function = n.Func(engine.EventX(&e))
		since := int64(engine.EventY(&e)) - int64(start)
		ev.SinceT = &since
	}
	return ev
}

// slackOf is a timer event's slack, nil when the engine did not know it.
func slackOf(e *engine.Event) *uint64 {
	if ns, ok := engine.EventSlack(e); ok {
		return &ns
	}
	return nil
}

// decodeIPI fills an IPI event: a send's sender and target, a receipt's
// sender (named from the comms learnt: the send events carry them), work
// and callsite, an exit's handler time.
func (n *Names) decodeIPI(ev *Event, e *engine.Event) {
	p := &IPI{Kind: IPIKindOf(e.Flags)}
	ev.IPI = p
	switch e.Type {
	case evIPISend:
		ev.TID, ev.Comm = e.A, engine.CommString(e.Comm)
		ev.TargetCPU = intp(int(e.B))
		p.SenderTID, p.SenderComm = e.A, ev.Comm
	case evIPIEntry:
		if e.A != 0 {
			p.SenderTID, p.SenderPID, p.SenderComm = e.A, e.B, n.Comm(e.A)
			p.SenderCPU = intp(int(e.C))
		}
		if fn := engine.EventX(e); fn != 0 {
			p.Function = n.Func(fn)
		}
		if cs := engine.EventY(e); cs != 0 {
			p.Callsite = n.Func(cs)
		}
	case evIPIExit:
		if e.A != 0 {
			p.SenderTID, p.SenderComm = e.A, n.Comm(e.A)
		}
		p.HandlerNs = engine.EventX(e)
	}
}

// decodeSwitch fills a switch's two tasks: tids, names, scheduling, and the
// state the previous one left in ("R+": preempted).
func (n *Names) decodeSwitch(ev *Event, e *engine.Event) {
	ev.PrevTID, ev.NextTID = e.A, e.B
	ev.PrevComm, ev.NextComm = n.Comm(e.A), engine.CommString(e.Comm)
	ev.PrevKPrio, ev.NextKPrio = sched.KPrioFromByte(e.PrioA), sched.KPrioFromByte(e.PrioB)
	ev.prevPolicy, ev.nextPolicy = uint32(e.PolA), uint32(e.PolB)
	ev.PrevSched = sched.Describe(ev.prevPolicy, ev.PrevKPrio)
	ev.NextSched = sched.Describe(ev.nextPolicy, ev.NextKPrio)
	ev.Preempted = e.Flags&1 != 0
	ev.PrevState = sched.StateLetters(uint32(e.C))
	if ev.Preempted {
		ev.PrevState = "R+"
	}
	if e.A == 0 {
		ev.PrevComm, ev.PrevSched = "idle", ""
	}
	if e.B == 0 {
		ev.NextComm, ev.NextSched = "idle", ""
	}
}

// decodeWaker names what woke a task: a task, a hard IRQ, a softirq or a
// timer (whose expiry, relative to start, goes to ev).
func (n *Names) decodeWaker(ev *Event, e *engine.Event, start uint64) *Waker {
	w := &Waker{KPrio: sched.KPrioFromByte(e.PrioB)}
	switch e.Flags {
	case wakerTask:
		w.Kind, w.TID, w.Comm = WakerTask, e.B, engine.CommString(e.Comm)
		w.Sched = sched.Describe(uint32(e.PolB), w.KPrio)
		if e.B == 0 {
			w.Comm, w.Sched = "idle", ""
		}
	case wakerHardIRQ:
		w.Kind, w.IRQ, w.IRQName = WakerHardIRQ, intp(int(e.B)), n.IRQName(int(e.B))
	case wakerSoftIRQ:
		w.Kind, w.Vec = WakerSoftIRQ, intp(int(e.B))
		if int(e.B) < len(SoftirqNames) {
			w.VecName = SoftirqNames[e.B]
		}
	case wakerTimer:
		w.Kind, w.Function = WakerTimer, n.Func(engine.EventX(e))
		exp := int64(engine.EventY(e)) - int64(start)
		ev.ExpiryT = &exp
	}
	return w
}

// decodeSleep fills a sleep: the state, the timer's expiry if any, the
// sampled stack, and the reason and blocking function.
func (n *Names) decodeSleep(ev *Event, e *engine.Event, start uint64) {
	ev.TID, ev.Comm = e.A, n.Comm(e.A)
	ev.State = sched.StateLetters(uint32(e.C))
	if engine.EventX(e) != 0 {
		exp := int64(engine.EventX(e)) - int64(start)
		ev.ExpiryT = &exp
	}
	ev.Stack = n.frames(e.B)
	ev.Reason = SleepReason(ev.Stack, engine.EventX(e) != 0, uint32(e.C))
	// The kernel's reason, named at the blocking sleeps it walks (rts_sleep_named), unless a
	// sampled stack says more (a futex wait with or without PI).
	if r, ok := SleepReasons[e.Flags]; ok && (ev.Stack == nil || e.Flags != engine.SleepFutex) {
		ev.Reason = r
	}
	if site := engine.EventY(e); site != 0 && e.Flags != engine.SleepNone {
		ev.BlockedIn = n.Func(site)
		if e.Flags == engine.SleepOther && ev.Stack == nil {
			ev.Reason = ReasonOtherWait(ev.BlockedIn)
		}
	}
}

// frames symbolises stack id: from the stacks pinned at cut time when
// decoding a kept window (ids are reused), else from the stack map now.
func (n *Names) frames(id uint32) []string {
	if n == nil || int32(id) < 0 {
		return nil
	}
	if f, ok := n.pinned[id]; ok {
		return f
	}
	if n.stack == nil {
		return nil
	}
	addrs, err := n.stack(id)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, n.Func(a))
	}
	return out
}

// irqEntries are the functions where the interrupted context's frames begin.
var irqEntries = []string{"asm_sysvec_", "asm_common_interrupt", "asm_exc_", "el1h_64_irq", "el1_interrupt",
	"el0t_64_irq", "el0_interrupt", "call_on_irq_stack", "irq_exit_rcu"}

// InterruptedFrames drops the timer-interrupt frames (BPF, tracepoint,
// hrtimer, IRQ entry) from a stack taken in the timer interrupt, leaving the
// interrupted kernel code; empty when user space was interrupted.
func InterruptedFrames(frames []string) []string {
	cut := -1
	for i, f := range frames {
		for _, p := range irqEntries {
			if strings.HasPrefix(f, p) {
				cut = i
			}
		}
	}
	if cut < 0 {
		return frames
	}
	return frames[cut+1:]
}

// SleepReason classifies a voluntary sleep from its kernel stack.
func SleepReason(stack []string, timerArmed bool, state uint32) Reason {
	has := func(names ...string) bool {
		for _, f := range stack {
			for _, n := range names {
				if strings.HasPrefix(f, n) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case state&0x1000 != 0 || has("rtlock_slowlock", "rt_spin_lock"):
		return ReasonRTLock
	case has("futex_lock_pi", "rt_mutex_wait_proxy_lock", "__rt_mutex_start_proxy_lock"):
		return ReasonPIFutex
	case has("futex_wait"):
		if timerArmed {
			return ReasonFutexWaitTimeout
		}
		return ReasonFutexWait
	case has("do_nanosleep", "hrtimer_nanosleep", "common_nsleep"):
		return ReasonNanosleep
	case has("timerfd_read"):
		return ReasonTimerfd
	case has("ep_poll", "do_epoll_wait"):
		return ReasonEpoll
	case has("do_sys_poll", "do_select", "core_sys_select"):
		return ReasonPoll
	case has("eventfd_read"):
		return ReasonEventfd
	case has("pipe_read", "pipe_write"):
		return ReasonPipe
	case has("rt_mutex", "mutex_lock", "__mutex_lock"):
		return ReasonKernelMutex
	case has("do_wait", "kernel_wait4"):
		return ReasonChild
	case has("irq_thread"):
		return ReasonIRQThreadIdle
	case timerArmed:
		return ReasonTimerSleep
	case len(stack) == 0:
		return ReasonNoStack
	}
	return ReasonOtherWait(stack[0])
}

// decodeNoise fills a noise interval: its task, start and end (relative
// to start), the causes of its parts and its largest part's.
func decodeNoise(ev *Event, e *engine.Event, start uint64, n *Names) {
	ev.TID, ev.Comm = e.A, n.Comm(e.A)
	since, end := int64(engine.EventX(e))-int64(start), int64(engine.EventY(e))-int64(start)
	ev.SinceT, ev.EndT = &since, &end
	for c := uint8(1); c < uint8(engine.NoiseCauseCount); c++ {
		if engine.NoiseMask(e)&(1<<c) != 0 {
			ev.NoiseCauses = append(ev.NoiseCauses, NoiseCauses[c])
		}
	}
	ev.TopCause = NoiseCauses[engine.NoiseTop(e)]
	switch engine.NoiseTop(e) {
	case engine.NoiseIRQ:
		ev.IRQ, ev.IRQName = intp(int(e.B)), n.IRQName(int(e.B))
	case engine.NoiseSoftirq:
		ev.Vec = intp(int(e.B))
		if int(e.B) < len(SoftirqNames) {
			ev.VecName = SoftirqNames[e.B]
		}
	case engine.NoisePreempt, engine.NoiseThrottle:
		ev.ByTID = e.B
	case engine.NoiseIPI:
		ev.IPI = &IPI{Kind: noiseIPIKind(e.B)}
	}
}

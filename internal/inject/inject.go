package inject

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/ksym"
)

// MaxSpin is the longest busy-wait an injector accepts (also enforced in BPF).
const MaxSpin = 20 * time.Millisecond

// Stats are what an injector really did, as measured in BPF.
type Stats struct {
	Count    uint64        // spins
	Total    time.Duration // time spent spinning
	Max      time.Duration // longest spin
	Min      time.Duration // shortest spin: what was asked for, which stalls only lengthen
	WrongCPU uint64        // runs refused because they were not on the target CPU
	// OverBudget: spins refused in BPF because they would have taken more
	// than MaxDuty of a second of the CPU, whatever user space asked.
	OverBudget uint64
}

// MaxDuty is the share of each second of its CPU an injector may spin:
// enforced in BPF (INJ_BUDGET_NS of INJ_WINDOW_NS: half a second, plus one
// MaxSpin of slack for spins a stall stretched) beside the checks of
// internal/scenario.
const MaxDuty = 0.5

const (
	kindIRQ     = 0
	kindPreempt = 1
)

func checkSpin(d time.Duration) error {
	if d <= 0 || d > MaxSpin {
		return fmt.Errorf("spin %v is outside 1 ns-%v", d, MaxSpin)
	}
	return nil
}

func load(consts map[string]any, progs ...string) (*ebpf.Collection, error) {
	_ = rlimit.RemoveMemlock()
	// The spin is a bpf_loop (Linux 5.17, commit e6f2dd0f8067 "bpf: Add
	// bpf_loop helper"): the verifier cannot bound an open-coded 20 ms spin.
	if err := features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnLoop); errors.Is(err, ebpf.ErrNotSupported) {
		return nil, errors.New("the fault injectors need the bpf_loop helper (Linux 5.17 or later), which this kernel lacks")
	}
	spec, err := loadInject()
	if err != nil {
		return nil, err
	}
	for name, v := range consts {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	keep := map[string]*ebpf.ProgramSpec{}
	for _, p := range progs {
		keep[p] = spec.Programs[p]
	}
	spec.Programs = keep
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, errors.New("the kernel refused to load the injector's BPF program (EPERM): run as root or with CAP_BPF and CAP_PERFMON")
		}
		return nil, fmt.Errorf("loading the injector's BPF program: %w", err)
	}
	return coll, nil
}

func readStats(m *ebpf.Map, kind uint32) Stats {
	var s injectInjStats
	if err := m.Lookup(kind, &s); err != nil {
		return Stats{}
	}
	return Stats{Count: s.Count, Total: time.Duration(s.TotalNs), Max: time.Duration(s.MaxNs), Min: time.Duration(s.MinNs), WrongCPU: s.WrongCpu,
		OverBudget: s.OverBudget}
}

// IRQNoise busy-waits in hard-IRQ context each time the sleeper timer of
// one thread (the injector) expires on a CPU: that thread sleeps on an
// absolute-time timer at the injection rate, and every other timer of the
// CPU due during the spin (a victim's wakeup) fires late by up to the spin.
type IRQNoise struct {
	coll *ebpf.Collection
	lnk  link.Link
}

// StartIRQNoise attaches the hard-IRQ injector for the sleeps of thread
// injectorTid on cpu, spinning spin each time.
func StartIRQNoise(injectorTid, cpu int, spin time.Duration) (*IRQNoise, error) {
	if err := checkSpin(spin); err != nil {
		return nil, err
	}
	syms, _ := ksym.Kernel()
	wake := syms.Addr("hrtimer_wakeup")
	if wake == 0 {
		return nil, errors.New("hrtimer_wakeup is not in /proc/kallsyms (kptr_restrict?): the hard-IRQ injector cannot recognise its timer")
	}
	coll, err := load(map[string]any{
		"hrtimer_wakeup_fn": wake,
		"injector_tid":      uint32(injectorTid),
		"target_cpu":        uint32(cpu),
		"irq_spin_ns":       uint64(spin),
	}, "irq_noise")
	if err != nil {
		return nil, err
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs["irq_noise"]})
	if err != nil {
		coll.Close()
		return nil, fmt.Errorf("attaching the hard-IRQ injector to hrtimer_expire_entry: %w", err)
	}
	return &IRQNoise{coll: coll, lnk: l}, nil
}

// Stats reports the spins done so far.
func (n *IRQNoise) Stats() Stats { return readStats(n.coll.Maps["stats"], kindIRQ) }

// Close detaches the injector (a process exit does it too).
func (n *IRQNoise) Close() {
	n.lnk.Close()
	n.coll.Close()
}

// PreemptOff busy-waits in kernel context with preemption disabled and
// interrupts enabled, on the CPU of the calling thread, through
// BPF_PROG_TEST_RUN of a raw_tp program (the kernel runs it between
// get_cpu() and put_cpu()).
type PreemptOff struct {
	coll *ebpf.Collection
	fd   int
	attr testRunAttr
	args [1]uint64
}

// testRunAttr is the BPF_PROG_TEST_RUN part of union bpf_attr.
type testRunAttr struct {
	progFd      uint32
	retval      uint32
	dataSizeIn  uint32
	dataSizeOut uint32
	dataIn      uint64
	dataOut     uint64
	repeat      uint32
	duration    uint32
	ctxSizeIn   uint32
	ctxSizeOut  uint32
	ctxIn       uint64
	ctxOut      uint64
	flags       uint32
	cpu         uint32
	batchSize   uint32
	_           uint32
}

const bpfProgTestRun = 10

// LoadPreemptOff loads the preemption-off injector for cpu; Spin must be
// called from a thread pinned there (it refuses to spin elsewhere).
func LoadPreemptOff(cpu int) (*PreemptOff, error) {
	coll, err := load(map[string]any{"target_cpu": uint32(cpu)}, "preempt_off")
	if err != nil {
		return nil, err
	}
	p := &PreemptOff{coll: coll, fd: coll.Programs["preempt_off"].FD()}
	p.attr.progFd = uint32(p.fd)
	p.attr.ctxSizeIn = uint32(unsafe.Sizeof(p.args))
	p.attr.ctxIn = uint64(uintptr(unsafe.Pointer(&p.args[0])))
	return p, nil
}

// Spin holds the calling thread's CPU with preemption disabled for d. It
// allocates nothing, so it can run in a loop with the GC off.
func (p *PreemptOff) Spin(d time.Duration) error {
	if err := checkSpin(d); err != nil {
		return err
	}
	p.args[0] = uint64(d)
	p.attr.retval = 0
	_, _, e := unix.Syscall(unix.SYS_BPF, bpfProgTestRun, uintptr(unsafe.Pointer(&p.attr)), unsafe.Sizeof(p.attr))
	if e != 0 && e != unix.EINTR {
		return fmt.Errorf("BPF_PROG_TEST_RUN: %w", e)
	}
	if p.attr.retval != 0 {
		return errors.New("the preemption-off injector ran on another CPU than its target")
	}
	return nil
}

// Stats reports the spins done so far.
func (p *PreemptOff) Stats() Stats { return readStats(p.coll.Maps["stats"], kindPreempt) }

// Close unloads the program.
func (p *PreemptOff) Close() { p.coll.Close() }

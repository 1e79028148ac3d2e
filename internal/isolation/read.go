package isolation

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
)

// softirqNames are the softirq vectors by number (NR_SOFTIRQS: 10).
var softirqNames = [...]string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}

// tickDeps are the tick_stop dependency bits (enum tick_dep_bits).
var tickDeps = [...]string{"POSIX_TIMER", "PERF_EVENTS", "SCHED", "CLOCK_UNSTABLE", "RCU", "RCU_EXP", "bit6", "bit7"}

// kindNames are the IPI kinds (enum rts_ipi_kind).
var kindNames = map[isoRtsIpiKind]string{
	isoRtsIpiKindRTS_IPI_CALL:     "function call",
	isoRtsIpiKindRTS_IPI_TLB:      "TLB shootdown",
	isoRtsIpiKindRTS_IPI_RESCHED:  "reschedule",
	isoRtsIpiKindRTS_IPI_IRQ_WORK: "irq_work",
	isoRtsIpiKindRTS_IPI_WAKEUP:   "remote wakeup",
}

// readMaps reads every count of the run into s.
func readMaps(coll *ebpf.Collection, s *Snapshot, syms *ksym.Table) error {
	watched := map[int]bool{}
	for _, c := range s.CPUs {
		watched[c] = true
	}
	for _, f := range []func(*ebpf.Collection, *Snapshot, map[int]bool, *ksym.Table) error{
		readCPUs, readIPIs, readIRQs, readWorks, readQueued, readTasks, readTimers, readTimerArms,
	} {
		if err := f(coll, s, watched, syms); err != nil {
			return err
		}
	}
	return nil
}

// readCPUs reads the per-CPU softirq, tick and loss counts.
func readCPUs(coll *ebpf.Collection, s *Snapshot, watched map[int]bool, _ *ksym.Table) error {
	var per []isoIsoCpu
	if err := coll.Maps["iso_cpus_state"].Lookup(uint32(0), &per); err != nil {
		return fmt.Errorf("reading iso_cpus_state: %w", err)
	}
	for cpu, c := range per {
		if !watched[cpu] {
			continue
		}
		s.Lost += c.Lost
		for v, t := range c.Softirqs {
			if t.Count > 0 || c.SoftirqRaised[v] > 0 {
				s.Softirqs = append(s.Softirqs, SoftirqRow{CPU: cpu, Vector: softirqNames[v], Raised: c.SoftirqRaised[v],
					Time: Time{Count: t.Count, Ns: t.Ns, MaxNs: t.MaxNs}})
			}
		}
		if c.TickStopped+c.TickKept+c.Tick.Count > 0 {
			tr := TickRow{CPU: cpu, Stopped: c.TickStopped, Kept: c.TickKept,
				Fired: Time{Count: c.Tick.Count, Ns: c.Tick.Ns, MaxNs: c.Tick.MaxNs}}
			for b, n := range c.TickDeps {
				if n > 0 {
					if tr.Deps == nil {
						tr.Deps = map[string]uint64{}
					}
					tr.Deps[tickDeps[b]] = n
				}
			}
			s.Ticks = append(s.Ticks, tr)
		}
	}
	return nil
}

// readIPIs reads the IPIs received on watched CPUs by sender (ipi_pairs),
// and those received with no send seen (ipi_cpus' unattributed counts).
func readIPIs(coll *ebpf.Collection, s *Snapshot, watched map[int]bool, syms *ksym.Table) error {
	var k isoRtsIpiKey
	var v isoRtsIpiPair
	it := coll.Maps["ipi_pairs"].Iterate()
	for it.Next(&k, &v) {
		if !watched[int(k.Cpu)] || k.Sender == 0 || v.Tgid == s.self {
			continue
		}
		r := IPIRow{CPU: int(k.Cpu), Kind: kindNames[isoRtsIpiKind(k.Kind)], SenderTID: k.Sender, SenderPID: v.Tgid,
			SenderCPU: int(v.SenderCpu), Comm: engine.CommString(v.Comm), Time: Time{Count: v.Count, Ns: v.Ns, MaxNs: v.MaxNs}}
		if v.Fn != 0 {
			r.Func = syms.Func(v.Fn)
		}
		if v.Callsite != 0 {
			r.Callsite = syms.Func(v.Callsite)
		}
		s.IPIs = append(s.IPIs, r)
	}
	if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return fmt.Errorf("reading ipi_pairs: %w", err)
	}
	var per []isoRtsIpiCpu
	if err := coll.Maps["ipi_cpus"].Lookup(uint32(0), &per); err != nil {
		return fmt.Errorf("reading ipi_cpus: %w", err)
	}
	for cpu, c := range per {
		if !watched[cpu] {
			continue
		}
		s.Lost += c.PairsLost
		for kind, n := range c.Unattributed {
			if n > 0 {
				s.IPIs = append(s.IPIs, IPIRow{CPU: cpu, Kind: kindNames[isoRtsIpiKind(kind)], SenderCPU: -1, Time: Time{Count: n}})
			}
		}
	}
	return nil
}

// perCPU iterates a per-CPU hash, calling fn for each watched CPU's
// non-empty value.
func perCPU[K any, V any](m *ebpf.Map, watched map[int]bool, empty func(*V) bool, fn func(cpu int, k K, v *V)) error {
	var k K
	var vs []V
	it := m.Iterate()
	for it.Next(&k, &vs) {
		for cpu := range vs {
			if watched[cpu] && !empty(&vs[cpu]) {
				fn(cpu, k, &vs[cpu])
			}
		}
	}
	if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return fmt.Errorf("reading %s: %w", m.String(), err)
	}
	return nil
}

func noTime(t *isoIsoTime) bool { return t.Count == 0 }

func readIRQs(coll *ebpf.Collection, s *Snapshot, watched map[int]bool, _ *ksym.Table) error {
	return perCPU(coll.Maps["iso_irqs"], watched, noTime, func(cpu int, irq uint32, t *isoIsoTime) {
		r := IRQRow{CPU: cpu, IRQ: int(irq), Time: Time{Count: t.Count, Ns: t.Ns, MaxNs: t.MaxNs}}
		r.Name, r.Affinity, r.Effective = irqInfo(int(irq))
		s.IRQs = append(s.IRQs, r)
	})
}

func readWorks(coll *ebpf.Collection, s *Snapshot, watched map[int]bool, syms *ksym.Table) error {
	return perCPU(coll.Maps["iso_works"], watched, noTime, func(cpu int, fn uint64, t *isoIsoTime) {
		s.Works = append(s.Works, WorkRow{CPU: cpu, Func: syms.Func(fn), Time: Time{Count: t.Count, Ns: t.Ns, MaxNs: t.MaxNs}})
	})
}

// readQueued reads the work queued onto watched CPUs: counted on the
// queueing CPU, every CPU's values are summed.
func readQueued(coll *ebpf.Collection, s *Snapshot, watched map[int]bool, syms *ksym.Table) error {
	all := map[int]bool{}
	for _, c := range s.Online {
		all[c] = true
	}
	byKey := map[isoIsoQueueKey]*QueueRow{}
	err := perCPU(coll.Maps["iso_queue"], all, func(q *isoIsoQueued) bool { return q.Count == 0 },
		func(_ int, k isoIsoQueueKey, q *isoIsoQueued) {
			if !watched[int(k.Cpu)] {
				return
			}
			r := byKey[k]
			if r == nil {
				r = &QueueRow{CPU: int(k.Cpu), Func: syms.Func(k.Fn), TID: k.Tid, PID: q.Tgid, Comm: engine.CommString(q.Comm), FromCPU: int(q.FromCpu)}
				byKey[k] = r
			}
			r.Count += q.Count
		})
	for _, r := range byKey {
		s.Queued = append(s.Queued, *r)
	}
	return err
}

func readTasks(coll *ebpf.Collection, s *Snapshot, watched map[int]bool, _ *ksym.Table) error {
	return perCPU(coll.Maps["iso_tasks"], watched, func(t *isoIsoTask) bool { return t.Run.Count == 0 },
		func(cpu int, tid uint32, t *isoIsoTask) {
			s.Tasks = append(s.Tasks, TaskRow{CPU: cpu, TID: tid, PID: t.Tgid, Comm: engine.CommString(t.Comm),
				Kthread: t.Kthread != 0, PerCPU: t.NrCpus == 1,
				Time: Time{Count: t.Run.Count, Ns: t.Run.Ns, MaxNs: t.Run.MaxNs}})
		})
}

// Package isolation is rtscope isolation: it watches CPUs set apart for
// real-time work and reports everything else that ran on them (IPIs,
// device IRQs, softirqs, queued work, foreign tasks, the tick, hypervisor
// steal), grouped by cause and sender, each with a remedy.
//
// Collect loads its BPF object (bpf/isolation.bpf.c, with the IPI hooks of
// bpf/ipi.bpf.h) and returns a Snapshot: the counts with every address and
// irq number already resolved, so that Analyze, the aggregation and the
// remedies, works the same on a live run and on a recorded one.
package isolation

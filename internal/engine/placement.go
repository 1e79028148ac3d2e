package engine

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// Placement is where a tracked task may run and last ran: what choosing
// rtscope's own CPUs needs of each task, without its histograms.
type Placement struct {
	Id            uint64
	Policy        uint32
	LastCPU       int
	CpusMask      uint64 // CPUs 0-63 the task may run on, when NrCpusAllowed <= 64
	NrCpusAllowed uint64
	Exited        bool
}

// Placements returns every tracked task's placement: at 1000 tracked
// tasks 1.3 ms, where AllStats, which joins every histogram, took 8.9 ms
// and 10 MB of garbage (BenchmarkPlacements), once a second for the
// housekeeping choice. Safe for concurrent use.
func (e *Engine) Placements() ([]Placement, error) {
	if !e.Features.Has(FeatureKernelBTF) {
		// The classic engine's placements come from the tasks themselves
		// (classicIdentity): its records carry no policy nor affinity.
		all, err := e.AllStats()
		out := make([]Placement, 0, len(all))
		for _, s := range all {
			out = append(out, placement(s.Id, s.Policy, s.LastCpu, s.CpusMask, uint64(s.NrCpusAllowed), s.Exited))
		}
		return out, err
	}
	var out []Placement
	err := e.eachStats(func(id uint64, k *bpfRtsTaskStats) error {
		out = append(out, placement(id, k.Policy, k.LastCpu, k.CpusMask, uint64(k.NrCpusAllowed), k.Exited))
		return nil
	})
	return out, err
}

func placement(id uint64, policy, lastCPU uint32, mask, nrCPUs uint64, exited uint32) Placement {
	return Placement{Id: id, Policy: policy, LastCPU: int(lastCPU), CpusMask: mask, NrCpusAllowed: nrCPUs, Exited: exited != 0}
}

// published reports whether BPF has published k: its id is written last,
// after the task's identity (rts_track_publish); a reader in between saw a
// tracked task without a name.
func published(k *bpfRtsTaskStats) bool { return k.Id != 0 }

// lookupStats reads task id's statistics; ebpf.ErrKeyNotExist until BPF
// has published them.
func (e *Engine) lookupStats(id uint64, k *bpfRtsTaskStats) error {
	if err := e.objs.Stats.Lookup(id, k); err != nil {
		return err
	}
	if !published(k) {
		return fmt.Errorf("task %d: statistics not yet published: %w", id, ebpf.ErrKeyNotExist)
	}
	return nil
}

// statsBatch is how many tasks' statistics one batch lookup copies
// (5 KB each).
const statsBatch = 128

// eachStats calls f with every task's statistics, read in batches of the
// statistics map (one lookup a task before Linux 5.6): a third of the time
// of an iteration, which makes two system calls a task. k is valid during
// the call only. Entries not yet published (published) are left out.
// Safe for concurrent use: calls are serialised.
func (e *Engine) eachStats(f func(id uint64, k *bpfRtsTaskStats) error) error {
	e.statsBufMu.Lock()
	defer e.statsBufMu.Unlock()
	if e.statsVals == nil {
		e.statsKeys, e.statsVals = make([]uint64, statsBatch), make([]bpfRtsTaskStats, statsBatch)
	}
	keys, vals := e.statsKeys, e.statsVals
	var cursor ebpf.MapBatchCursor
	for first := true; ; first = false {
		n, err := e.objs.Stats.BatchLookup(&cursor, keys, vals, nil)
		for i := range n {
			if !published(&vals[i]) {
				continue
			}
			if ferr := f(keys[i], &vals[i]); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil // the last batch
		}
		if errors.Is(err, ebpf.ErrNotSupported) && first {
			break
		}
		if err != nil {
			return err
		}
	}
	var id uint64
	it := e.objs.Stats.Iterate()
	for it.Next(&id, &vals[0]) {
		if !published(&vals[0]) {
			continue
		}
		if err := f(id, &vals[0]); err != nil {
			return err
		}
	}
	return it.Err()
}

package engine

import (
	"errors"
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/metric"
)

// Want registers targets: tids, processes (tgid) and names. Call Scan after
// to pick up the tasks that already exist; later ones are caught at fork,
// exec and rename.
func (e *Engine) WantTID(tid uint32, target uint32, flags uint32) error {
	return full(e.objs.WantTid.Put(tid, bpfRtsTarget{Index: target, Flags: flags}), e.objs.WantTid, "threads")
}

func (e *Engine) WantTGID(pid uint32, target uint32) error {
	return full(e.objs.WantTgid.Put(pid, bpfRtsTarget{Index: target}), e.objs.WantTgid, "processes")
}

// full names the limit when a target map is full (the kernel says E2BIG:
// "argument list too long").
func full(err error, m *ebpf.Map, what string) error {
	if errors.Is(err, unix.E2BIG) {
		return fmt.Errorf("at most %d %s can be watched", m.MaxEntries(), what)
	}
	return err
}

func (e *Engine) WantComm(comm string, target uint32) error {
	var key [16]byte
	copy(key[:15], comm)
	return full(e.objs.WantComm.Put(key, bpfRtsTarget{Index: target}), e.objs.WantComm, "task names")
}

// ErrCgroupClassic: the classic engine reads no kernel structure, so it
// cannot tell a task's cgroup.
var ErrCgroupClassic = errors.New("cgroup targets need the BTF engine (kernel BTF): the classic engine cannot tell a task's cgroup")

// WantCgroup registers a cgroup target by its cgroup v2 id (its
// directory's inode number, target.Cgroup): every task in it or in a
// cgroup below it, found by Scan, at fork and exec, and when it moves in
// (Features.CgroupAttach).
func (e *Engine) WantCgroup(id uint64, target uint32) error {
	if !e.Features.Has(FeatureKernelBTF) {
		return ErrCgroupClassic
	}
	if err := e.objs.WantCgroup.Put(id, bpfRtsTarget{Index: target}); err != nil {
		return full(err, e.objs.WantCgroup, "cgroups")
	}
	return e.countCgroups()
}

// ForgetCgroup removes a cgroup target: tasks that enter it later are not
// tracked; those tracked already stay tracked until they exit.
func (e *Engine) ForgetCgroup(id uint64) {
	if !e.Features.Has(FeatureKernelBTF) {
		return
	}
	_ = e.objs.WantCgroup.Delete(id)
	_ = e.countCgroups() // a stale count costs a walk at fork, nothing else
}

// countCgroups sets want_cgroups to want_cgroup's entries.
func (e *Engine) countCgroups() error {
	var n uint32
	var k uint64
	var v bpfRtsTarget
	for it := e.objs.WantCgroup.Iterate(); it.Next(&k, &v); {
		n++
	}
	if err := e.objs.WantCgroups.Set(n); err != nil {
		return fmt.Errorf("counting cgroup targets: %w", err)
	}
	return nil
}

// ForgetTID removes a tid target (so that a reused tid is not tracked again).
func (e *Engine) ForgetTID(tid uint32) {
	_ = e.objs.WantTid.Delete(tid)
}

// ForgetTGID and ForgetComm remove a process or name target: tasks that
// appear later are not tracked; those tracked already stay tracked until
// they exit, so that their counters never go back.
func (e *Engine) ForgetTGID(pid uint32) {
	_ = e.objs.WantTgid.Delete(pid)
}

// ForgetComm: see ForgetTGID.
func (e *Engine) ForgetComm(comm string) {
	var key [16]byte
	copy(key[:15], comm)
	_ = e.objs.WantComm.Delete(key)
}

// SetSLO sets the bounds of tid or pid id (ns, 0: none), overriding the
// defaults, for the tasks tracked from now on: a tracked task copies its
// bounds when its tracking starts (ReapplySLO gives them to the tasks
// tracked already).
func (e *Engine) SetSLO(id uint32, bounds [metric.Count]uint64) error {
	v := bpfRtsSlo{Bound: bounds}
	if err := e.objs.SloById.Put(id, &v); err != nil {
		return fmt.Errorf("setting the SLO of %d: %w", id, full(err, e.objs.SloById, "ids with SLOs of their own"))
	}
	return nil
}

// ForgetSLO removes the bounds of id: tasks tracked from now on get the
// defaults.
func (e *Engine) ForgetSLO(id uint32) {
	_ = e.objs.SloById.Delete(id)
}

// sloDefaultKey is the slo_by_id key of the run-time default bounds
// (RTS_SLO_DEFAULT_KEY): no tracked task has tid or pid 0.
const sloDefaultKey = uint32(0)

// SetSLODefault replaces the default bounds (Config.SLODefault, a
// read-only constant of the loaded programs) for the tasks tracked from
// now on; ReapplySLO gives them to those tracked already.
func (e *Engine) SetSLODefault(bounds [metric.Count]uint64) error {
	v := bpfRtsSlo{Bound: bounds}
	if err := e.objs.SloById.Put(sloDefaultKey, &v); err != nil {
		return fmt.Errorf("setting the default SLO: %w", full(err, e.objs.SloById, "ids with SLOs of their own"))
	}
	return nil
}

// ReapplySLO sets every tracked task's bounds again from SetSLO,
// ForgetSLO and SetSLODefault, keeping its counts and violations so far.
// It returns the number of tasks changed, or Features.SLOReapply when the
// kernel cannot (then only tasks tracked later get the new bounds).
// One BPF_PROG_TEST_RUN: 0.3-0.5 ms for 6 tasks here (TestReapplySLO),
// off the hot path (the kernel reads each task's bounds from its statistics).
func (e *Engine) ReapplySLO() (int, error) {
	if e.reapply == nil {
		return 0, e.Features.SLOReapply
	}
	ret, err := e.reapply.Programs["reapply_slo"].Run(&ebpf.RunOptions{Context: []uint64{0}})
	if err != nil {
		return 0, fmt.Errorf("running reapply_slo: %w", err)
	}
	return int(int32(ret)), nil
}

// Scan runs the task iterator: every existing task that matches a target starts being tracked.
func (e *Engine) Scan() error { return e.ScanWith(nil) }

// ScanBatch is how many tasks ScanWith tracks between two calls of its
// function: at 1000 tracked threads beside stress-ng --switch 2 the scan
// took 11-24 ms, longer than a flight recorder ring lasts there (17 ms).
const ScanBatch = 64

// ScanWith is Scan, calling between (when not nil) each time up to
// ScanBatch more tasks were tracked, on the caller's goroutine: a session
// polls there, so that the first windows of the tasks tracked early are
// cut before the rings wrap.
func (e *Engine) ScanWith(between func()) error {
	return e.back.scan(e, between)
}

// runTaskIter runs a task iterator program over every task, to the end,
// calling between (when not nil) after each read that returned output.
func runTaskIter(prog *ebpf.Program, between func()) error {
	it, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		return fmt.Errorf("task iterator: %w", err)
	}
	defer it.Close() //nolint:errcheck // BPF iterator link
	r, err := it.Open()
	if err != nil {
		return err
	}
	defer r.Close() //nolint:errcheck // read-only
	return readIter(r, between)
}

// Untrack stops tracking the tasks that the target of index target
// selected, once it was removed (ForgetTID, ForgetTGID, ForgetComm,
// ForgetCgroup): each ends as if it exited (its statistics marked exited,
// an exit notice queued: the session reports and forgets them), unless
// another target still wants it, which it then counts under. The classic
// engine cannot walk the tasks: there they stay tracked until they exit
// (classicBackend.untrack). Call it on the session's goroutine.
func (e *Engine) Untrack(target uint32) error {
	return e.back.untrack(e, target)
}

// readIter reads a task iterator to its end: reading runs the program on
// every task. track_existing writes a byte a task tracked, and a read
// returns once it holds ScanBatch of them (bpf_seq_read stops at the size
// asked), so between runs every ScanBatch tasks tracked; untrack_existing
// writes nothing. io.EOF is that end. EAGAIN is the kernel pausing a read
// that visited a million objects without output (bpf_seq_read,
// MAX_ITER_OBJECTS): the next read goes on from there (the programs always
// return 0, so it is never a program's retry). Any other error leaves
// tasks unscanned and is returned.
func readIter(r io.Reader, between func()) error {
	buf := make([]byte, ScanBatch)
	for {
		n, err := r.Read(buf)
		if n > 0 && between != nil {
			between()
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, unix.EAGAIN):
			continue
		case err != nil:
			return fmt.Errorf("task iterator: %w", err)
		}
	}
}

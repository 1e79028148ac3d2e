package engine

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// StealClock says how hypervisor steal time reaches the flight recorder:
// Readable when the kernel has the scheduler's per-CPU steal accounting
// (rq->prev_steal_time_rq, CONFIG_PARAVIRT_TIME_ACCOUNTING) and its
// task-to-runqueue link (CONFIG_FAIR_GROUP_SCHED); Method names it, or why
// not, for the JSON `features`.
type StealClock struct {
	Readable bool
	Method   string
}

// stealClock probes the kernel's types for the fields rts_steal_ns() reads.
func stealClock(spec *btf.Spec) StealClock {
	has := func(typ, field string) bool {
		var s *btf.Struct
		if err := spec.TypeByName(typ, &s); err != nil {
			return false
		}
		for _, m := range s.Members {
			if m.Name == field {
				return true
			}
		}
		return false
	}
	switch {
	case !has("rq", "prev_steal_time_rq"):
		return StealClock{Method: "unreadable: this kernel does not account steal time in the scheduler (CONFIG_PARAVIRT_TIME_ACCOUNTING)"}
	case !has("sched_entity", "cfs_rq"):
		return StealClock{Method: "unreadable: this kernel has no task group run queues (CONFIG_FAIR_GROUP_SCHED)"}
	}
	return StealClock{Readable: true, Method: "scheduler steal clock (rq->prev_steal_time_rq), read at each context switch"}
}

// StealTotals returns each CPU's cumulative hypervisor steal time in ns
// from /proc/stat (index: CPU number; jiffy resolution).
func StealTotals() (perCPU []uint64, err error) {
	return readStealTotals("/proc/stat")
}

func readStealTotals(path string) ([]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read-only
	// USER_HZ is 100 on every Linux architecture rtscope builds for.
	const nsPerTick = 10_000_000
	var out []uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 9 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(fields[0][3:])
		if err != nil || cpu < 0 || cpu > 1<<16 {
			continue
		}
		steal, err := strconv.ParseUint(fields[8], 10, 64)
		if err != nil {
			continue
		}
		for len(out) <= cpu {
			out = append(out, 0)
		}
		out[cpu] = steal * nsPerTick
	}
	return out, sc.Err()
}

// UnderHypervisor tells whether this machine is a virtual machine, as far
// as the CPU flags or /sys/hypervisor say.
func UnderHypervisor() bool {
	if b, err := os.ReadFile("/sys/hypervisor/type"); err == nil && strings.TrimSpace(string(b)) != "" {
		return true
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return false
	}
	defer f.Close() //nolint:errcheck // read-only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "flags") {
			return strings.Contains(l+" ", " hypervisor ")
		}
	}
	return false
}

// StealSeen returns each CPU's cumulative steal time (ns) as the engine
// last read it at a context switch there (0: not read yet, or no steal
// clock). Safe to call concurrently with the programs (a racy snapshot).
func (e *Engine) StealSeen() ([]uint64, error) {
	var per []bpfRtsCpuState
	if err := e.objs.Cpus.Lookup(uint32(0), &per); err != nil {
		return nil, err
	}
	out := make([]uint64, len(per))
	for i, c := range per {
		out[i] = c.StealSeen
	}
	return out, nil
}

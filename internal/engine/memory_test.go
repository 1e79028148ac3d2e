package engine

import (
	"os"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
)

// TestDefaultFlightFor: 8192 events per CPU up to 2 CPUs, then halved as the
// CPUs double (the rings stay within DefaultFlightBytes), never below 2048.
func TestDefaultFlightFor(t *testing.T) {
	for ncpu, want := range map[int]uint32{1: 8192, 2: 8192, 3: 4096, 4: 4096, 8: 2048, 64: 2048} {
		if got := DefaultFlightFor(ncpu); got != want {
			t.Errorf("DefaultFlightFor(%d) = %d, want %d", ncpu, got, want)
		}
		if err := CheckFlightPerCPU(DefaultFlightFor(ncpu)); err != nil {
			t.Errorf("DefaultFlightFor(%d): %v", ncpu, err)
		}
	}
}

// TestTaskStatsSize: a tracked task's statistics (the stats hash value)
// within 7 KiB and 96 bytes (200 16-bit buckets a metric, their carries in user
// space), so that 100 tasks take about 0.7 MiB (issue 12 set 5 KiB for 10
// metrics; the 3 SCHED_DEADLINE job metrics and their counters of issue 38
// took it from 5120 to 6656 bytes, the noise metric by 488 more, its
// per-cause totals by 72 (7216: 7 KiB and 72 bytes, 7 KiB more for 100
// tasks), the IPI and NMI causes by 24 more (7240); 32-bit buckets made it
// 9 KiB, 272 buckets 12 KiB).
func TestTaskStatsSize(t *testing.T) {
	if n := unsafe.Sizeof(bpfRtsTaskStats{}); n > 7240 {
		t.Errorf("the kernel's TaskStats takes %d bytes, above 7240", n)
	}
}

// TestKernelMemoryBudget: the engine at defaults with 100 tracked tasks
// takes at most 2 MiB of kernel memory on 4 CPUs (issue 12), as the kernel
// reports it (memlock of each map and program, MemoryBytes). Deterministic:
// 100 statistics entries are written from user space as tracking would
// create them; the per-CPU maps are scaled from this machine's possible
// CPUs to 4, the flight recorder sized as DefaultFlightFor(4); task storage,
// charged to each task rather than the map, is added as the bench
// estimates it (value + 256 bytes a task). Each map's share on 4 CPUs is
// logged. Measured 2.18 MiB with the 13 metrics of issue 38 (1.93 with 10,
// under issue 12's 2 MiB; 2.31 with 32-bit buckets, 3.70 before the
// 200-bucket histograms and the sized maps): the budget is 2.25 MiB.
func TestKernelMemoryBudget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	// 2.35 MiB: the DEADLINE job metrics (2.18 MiB measured) and the noise
	// metric (48 KiB of statistics for 100 tasks) raised it from 2 MiB.
	const tasks, cpus, budget = 100, 4, 2.35 * (1 << 20)
	e, err := Load(Config{Trace: true, SleepStacks: true, StackMinWait: DefaultStackMinWait, FlightPerCPU: DefaultFlightFor(cpus)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var zero bpfRtsTaskStats
	for id := uint64(1); id <= tasks; id++ {
		if err := e.objs.Stats.Put(id, &zero); err != nil {
			t.Fatal(err)
		}
	}
	total := float64(e.MemoryBytes())
	scale := float64(cpus) / float64(e.NumCPU())
	seen := map[ebpf.MapID]bool{}
	var perCPU, progs float64
	for _, m := range e.loadedMaps() {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		ml, _ := info.Memlock()
		if seen[id] {
			continue
		}
		seen[id] = true
		at4 := float64(ml)
		if info.Name == "flight" || info.Type == ebpf.PerCPUArray || info.Type == ebpf.PerCPUHash {
			perCPU += float64(ml)
			at4 *= scale
		}
		t.Logf("%-12s %8d bytes here, %8.0f on %d CPUs", info.Name, ml, at4, cpus)
	}
	for _, p := range e.programs() {
		if info, err := p.Info(); err == nil {
			ml, _ := info.Memlock()
			progs += float64(ml)
			t.Logf("program %-24s %8d bytes", info.Name, ml)
		}
	}
	storage := float64(tasks * (e.objs.Tasks.ValueSize() + 256))
	t.Logf("%-12s %8.0f bytes (%d programs)", "programs", progs, len(e.programs()))
	t.Logf("%-12s %8.0f bytes (task storage, estimated)", "tasks", storage)
	at4 := total + perCPU*(scale-1) + storage
	t.Logf("%d tasks: %.0f bytes here (%d possible CPUs), %.0f bytes = %.2f MiB on %d CPUs with task storage", tasks, total, e.NumCPU(), at4, at4/(1<<20), cpus)
	if at4 > budget {
		t.Errorf("%d tracked tasks on %d CPUs take %.2f MiB of kernel memory, above %.1f MiB", tasks, cpus, at4/(1<<20), float64(budget)/(1<<20))
	}
}

// TestMemoryBytesFollowsEntries: MemoryBytes, which reads the fixed maps
// and the programs once, still sees the statistics hash grow with tracked
// tasks, and equals every map and program read afresh.
func TestMemoryBytesFollowsEntries(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	e, err := Load(Config{Trace: true, SleepStacks: true, StackMinWait: DefaultStackMinWait})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	before := e.MemoryBytes()
	var zero bpfRtsTaskStats // the kernel's layout (TaskStats is user space's)
	for id := uint64(1); id <= 100; id++ {
		if err := e.objs.Stats.Put(id, &zero); err != nil {
			t.Fatal(err)
		}
	}
	after := e.MemoryBytes()
	if after < before+100*uint64(unsafe.Sizeof(zero)) {
		t.Errorf("100 statistics entries of %d bytes: %d -> %d bytes", unsafe.Sizeof(zero), before, after)
	}
	var fresh uint64
	seen := map[ebpf.MapID]bool{}
	for _, m := range e.loadedMaps() {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := info.ID(); !seen[id] {
			seen[id] = true
			v, _ := info.Memlock()
			fresh += v
		}
	}
	for _, p := range e.programs() {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		v, _ := info.Memlock()
		fresh += v
	}
	if after != fresh {
		t.Errorf("MemoryBytes %d, every map and program read afresh %d", after, fresh)
	}
}

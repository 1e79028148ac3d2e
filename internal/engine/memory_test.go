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
// within 5 KiB, so that 100 tasks take about 0.5 MiB (issue 12; 272 32-bit
// buckets a metric made it 12 KiB).
func TestTaskStatsSize(t *testing.T) {
	if n := unsafe.Sizeof(TaskStats{}); n > 5120 {
		t.Errorf("TaskStats takes %d bytes, above 5120", n)
	}
}

// TestHistogramFold: counts kept after halvings are scaled back by the
// number of folds.
func TestHistogramFold(t *testing.T) {
	var m MetricStats
	m.Hist[3], m.Hist[10], m.HistShift = 7, 65535, 2
	h := m.Histogram()
	if h[3] != 28 || h[10] != 65535<<2 || h[0] != 0 {
		t.Errorf("histogram %v %v %v, want 28 %d 0", h[3], h[10], h[0], 65535<<2)
	}
}

// TestKernelMemoryBudget: the engine at defaults with 100 tracked tasks
// takes at most 2 MiB of kernel memory on 4 CPUs (issue 12), as the kernel
// reports it (memlock of each map and program, MemoryBytes). Deterministic:
// 100 statistics entries are written from user space as tracking would
// create them; the per-CPU maps are scaled from this machine's possible
// CPUs to 4, the flight recorder sized as DefaultFlightFor(4); task storage,
// charged to each task rather than the map, is added as the bench
// estimates it (value + 256 bytes a task).
func TestKernelMemoryBudget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	const tasks, cpus, budget = 100, 4, 2 << 20
	e, err := Load(Config{Trace: true, SleepStacks: true, StackMinWait: DefaultStackMinWait, FlightPerCPU: DefaultFlightFor(cpus)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var zero TaskStats
	for id := uint64(1); id <= tasks; id++ {
		if err := e.objs.Stats.Put(id, &zero); err != nil {
			t.Fatal(err)
		}
	}
	total := float64(e.MemoryBytes())
	seen := map[ebpf.MapID]bool{}
	var perCPU float64
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
		if info.Name == "flight" || info.Type == ebpf.PerCPUArray || info.Type == ebpf.PerCPUHash {
			perCPU += float64(ml)
		}
		t.Logf("%-12s %8d bytes", info.Name, ml)
	}
	for _, p := range e.programs() {
		if info, err := p.Info(); err == nil {
			ml, _ := info.Memlock()
			t.Logf("program %-24s %8d bytes", info.Name, ml)
		}
	}
	storage := float64(tasks * (e.objs.Tasks.ValueSize() + 256))
	at4 := total + perCPU*(float64(cpus)/float64(e.NumCPU())-1) + storage
	t.Logf("%d tasks: %.0f bytes here (%d possible CPUs), %.2f MiB on %d CPUs with task storage", tasks, total, e.NumCPU(), at4/(1<<20), cpus)
	if at4 > budget {
		t.Errorf("%d tracked tasks on %d CPUs take %.2f MiB of kernel memory, above %d MiB", tasks, cpus, at4/(1<<20), budget>>20)
	}
}

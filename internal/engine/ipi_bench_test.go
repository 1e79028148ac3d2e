package engine

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// BenchmarkIPIShootdown: one op is an mprotect pair on CPU 0 (read-only,
// then read-write) whose first flushes the page from CPU 1, where another
// thread of the process reads it: the sender waits for CPU 1's flush, so
// the receiver's hooks add to the op. Without rtscope, with the engine
// without --ipi (the receipts as noise only), and with --ipi (both
// engines), the IPI programs' own cost reported per run from the kernel's
// BPF statistics (enabled for the run):
//
//	go test -run '^$' -bench IPIShootdown -benchtime 3s ./internal/engine
func BenchmarkIPIShootdown(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs 2 CPUs")
	}
	b.Run("none", func(b *testing.B) { shootdownOps(b, nil) })
	for _, kind := range []string{EngineBTF, EngineClassic} {
		b.Run(kind, func(b *testing.B) { shootdownOps(b, &Config{Trace: true, Engine: kind}) })
		b.Run(kind+"-ipi", func(b *testing.B) { shootdownOps(b, &Config{Trace: true, Engine: kind, IPI: true}) })
	}
}

func shootdownOps(b *testing.B, cfg *Config) {
	var e *Engine
	if cfg != nil {
		var err error
		if e, err = Load(*cfg); err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		if err := e.Attach(); err != nil {
			b.Fatal(err)
		}
		stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
		if err != nil {
			b.Fatal(err)
		}
		defer stats.Close()
	}
	page, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(page) //nolint:errcheck // test memory
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pinThread(1)
		defer runtime.UnlockOSThread()
		var sink byte
		for !stop.Load() {
			sink += page[64]
		}
		_ = sink
	}()
	pinThread(0)
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for b.Loop() {
		page[0] = 1
		_ = unix.Mprotect(page, unix.PROT_READ)
		_ = unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE)
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	if e != nil { // without --ipi the receipts are attached too, as noise
		reportIPIProgramCost(b, e)
	}
}

func pinThread(cpu int) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	_ = unix.SchedSetaffinity(0, &set)
}

// reportIPIProgramCost reports the mean run time of the send hooks and of
// a receipt (entry + exit) over the run.
func reportIPIProgramCost(b *testing.B, e *Engine) {
	var sendNs, sendRuns, recvNs, recvRuns uint64
	for _, c := range e.collections() {
		for name, p := range c.Programs {
			st, err := p.Stats()
			if err != nil {
				b.Fatal(err)
			}
			switch {
			case name == "on_csd_queue_cpu" || name == "on_ipi_send_cpu":
				sendNs += uint64(st.Runtime)
				sendRuns += st.RunCount
			case strings.HasPrefix(name, "on_ipi_") && strings.HasSuffix(name, "_entry"):
				recvNs += uint64(st.Runtime)
				recvRuns += st.RunCount
			case strings.HasPrefix(name, "on_ipi_") && strings.HasSuffix(name, "_exit"):
				recvNs += uint64(st.Runtime)
			}
		}
	}
	if sendRuns > 0 {
		b.ReportMetric(float64(sendNs)/float64(sendRuns), "ns/send-hook")
	}
	if recvRuns > 0 {
		b.ReportMetric(float64(recvNs)/float64(recvRuns), "ns/receipt")
		b.ReportMetric(float64(recvRuns)/float64(b.N), "receipts/op")
	}
}

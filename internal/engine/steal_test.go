package engine

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestReadStealTotals(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/stat"
	stat := "cpu  48215 0 15239 1927861 674 0 173 122 0 0\n" +
		"cpu0 25248 0 6203 964626 44 0 50 61 0 0\n" +
		"cpu1 22966 0 9035 963235 630 0 122 65 0 0\n" +
		"intr 123 4 5\n"
	if err := os.WriteFile(p, []byte(stat), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readStealTotals(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 610_000_000 || got[1] != 650_000_000 {
		t.Errorf("steal %v, want [610000000 650000000]", got)
	}
}

// The engine's steal reading agrees with /proc/stat (the kernel's own
// accounting of the same clock, in jiffies) on every CPU that switched.
func TestStealMatchesProcStat(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	e, err := Load(Config{Trace: true, FlightPerCPU: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !e.Features.Steal.Readable {
		t.Skipf("no steal clock to compare: %s", e.Features.Steal.Method)
	}
	if err := e.Attach(); err != nil {
		t.Fatal(err)
	}
	// Every CPU must switch: an idle tickless CPU may not switch for the
	// whole wait (CPU 1 read 0 ns once, against 15.8 s in /proc/stat), so
	// a thread pinned to each CPU sleeps there a few times.
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	for cpu := range e.NumCPU() {
		if allowed.IsSet(cpu) {
			if err := switchOn(cpu); err != nil {
				t.Fatalf("CPU %d: %v", cpu, err)
			}
		}
	}
	before, err := StealTotals()
	if err != nil {
		t.Fatal(err)
	}
	seen, err := e.StealSeen()
	if err != nil {
		t.Fatal(err)
	}
	after, err := StealTotals()
	if err != nil {
		t.Fatal(err)
	}
	const jiffy = 10_000_000
	for cpu := range seen {
		if cpu >= len(before) {
			continue
		}
		// /proc/stat rounds down to jiffies; allow one on each side plus
		// whatever accrued between the two reads.
		lo, hi := before[cpu], after[cpu]+2*jiffy
		if before[cpu] >= 2*jiffy {
			lo = before[cpu] - 2*jiffy
		}
		t.Logf("CPU %d: engine %d ns, /proc/stat %d..%d ns", cpu, seen[cpu], before[cpu], after[cpu])
		if seen[cpu] < lo || seen[cpu] > hi {
			t.Errorf("CPU %d: engine read %d ns of steal, /proc/stat says %d..%d", cpu, seen[cpu], before[cpu], after[cpu])
		}
	}
}

// switchOn makes cpu switch tasks: a thread pinned to it sleeps there five
// times.
func switchOn(cpu int) error {
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: its affinity goes with it
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errc <- err
			return
		}
		for range 5 {
			time.Sleep(time.Millisecond)
		}
		errc <- nil
	}()
	return <-errc
}

package engine

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// loadedEngine loads an engine of cfg (not attached), closed when the test ends.
func loadedEngine(tb testing.TB, cfg Config) *Engine {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Fatal("needs root (CI runs as root)")
	}
	e, err := Load(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e
}

// liveEngine loads and attaches an engine of cfg, closed when the test ends.
func liveEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e := loadedEngine(t, cfg)
	if err := e.Attach(); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCloseReleasesEverything: Close releases every program, map and link,
// without waiting for the garbage collector (demo runs several engines in
// one process; before, each left about 40 file descriptors open).
func TestCloseReleasesEverything(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	// With the collector off, as it is where rtscope turns it off: only
	// Close may release anything.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, kind := range []string{EngineBTF, EngineClassic} {
		// The first load opens what stays for the process (BTF, caches).
		e, err := Load(Config{Trace: true, FlightPerCPU: 64, Engine: kind})
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
		before := openFDs(t)
		for i := 0; i < 3; i++ {
			e, err := Load(Config{Trace: true, FlightPerCPU: 64, Engine: kind})
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			if e.Features.Engine != kind {
				t.Errorf("asked for %s, loaded %s", kind, e.Features.Engine)
			}
			if err := e.Attach(); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			e.Close()
		}
		if after := openFDs(t); after > before+2 {
			t.Errorf("%s: %d file descriptors open after 3 Load/Attach/Close, %d before", kind, after, before)
		}
	}
}

// The flight recorder's size is computed in 64 bits and capped: 2^20
// events on 4096 possible CPUs wrapped the 32-bit product to 0 before.
func TestFlightEntries(t *testing.T) {
	if n, err := flightEntries(2, DefaultFlightPerCPU); err != nil || n != 2*DefaultFlightPerCPU {
		t.Errorf("defaults on 2 CPUs: %d, %v", n, err)
	}
	for _, c := range []struct {
		ncpu   int
		perCPU uint32
		most   string
	}{
		{4096, MaxFlightPerCPU, "use --trace-events 4096 or less"}, // 2^32 entries: wrapped to 0
		{64, MaxFlightPerCPU, "use --trace-events 262144 or less"}, // 3 GiB
	} {
		n, err := flightEntries(c.ncpu, c.perCPU)
		if err == nil || !strings.Contains(err.Error(), c.most) {
			t.Errorf("%d events on %d CPUs: %d entries, %v; want refused with %q", c.perCPU, c.ncpu, n, err, c.most)
		}
	}
}

// TestDetachStopsRecording: after Detach no program records anything (the
// flight recorder's sequence numbers stand still while tasks switch), the
// maps stay readable, and Close still releases everything. watch detaches
// before its last reads, so that nothing overwrites the windows it cuts.
func TestDetachStopsRecording(t *testing.T) {
	e := liveEngine(t, Config{Trace: true, FlightPerCPU: 64})
	recorded := func() uint64 {
		var per []bpfRtsCpuState
		if err := e.objs.Cpus.Lookup(uint32(0), &per); err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, c := range per {
			n += c.Seq
		}
		return n
	}
	switches := func() {
		for range 20 {
			if err := switchOn(0); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := recorded()
	switches()
	attached := recorded()
	if attached == before {
		t.Fatal("attached, the engine recorded nothing over 20 context switches")
	}
	if err := e.Detach(); err != nil {
		t.Fatal(err)
	}
	if err := e.Detach(); err != nil { // a second one does nothing
		t.Fatal(err)
	}
	detached := recorded()
	switches()
	if after := recorded(); after != detached {
		t.Errorf("detached, the engine recorded %d events", after-detached)
	}
	if _, err := e.Heads(); err != nil {
		t.Errorf("the rings after Detach: %v", err)
	}
}

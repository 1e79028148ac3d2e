package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// packets counts the TracePackets of a Perfetto trace file (Trace.packet =
// 1, length-delimited) and fails on anything else at the top level. The
// contents are checked by internal/perfetto's decoding tests.
func packets(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 || num != 1 || typ != protowire.BytesType {
			t.Fatalf("%s: not a Perfetto trace at packet %d (field %d type %d)", path, n, num, typ)
		}
		b = b[l:]
		_, l = protowire.ConsumeBytes(b)
		if l < 0 {
			t.Fatalf("%s: packet %d truncated", path, n)
		}
		b = b[l:]
		n++
	}
	return n
}

// TestPerfettoFromTheCLI: watch and timerlat write their windows as
// Perfetto traces from the command line.
func TestPerfettoFromTheCLI(t *testing.T) {
	d := t.TempDir()
	wp := filepath.Join(d, "watch.pftrace")
	watch(t, "--perfetto", wp, "--slo", "latency=1ns", "--", "sh", "-c", "for i in 1 2 3 4 5; do sleep 0.01; done")
	if n := packets(t, wp); n < 4 {
		t.Errorf("watch --perfetto: %d packets; want system info, process tree, CPU bundles, tracks", n)
	}
	tp := filepath.Join(d, "timerlat.pftrace")
	out, err := exec.Command(rtscope, "timerlat", "-q", "-c", lastCPU(), "-T", "1", "-d", "30s", "--perfetto", tp).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("timerlat -T 1 --perfetto: %v\n%s", err, out)
	}
	if n := packets(t, tp); n < 4 {
		t.Errorf("timerlat --perfetto: %d packets", n)
	}
	if out, err := exec.Command(rtscope, "watch", "--no-trace", "--perfetto", wp, "--", "true").CombinedOutput(); err == nil {
		t.Errorf("--perfetto with --no-trace accepted:\n%s", out)
	}
}

package cli

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestHeapProfileWritten: the heap profile named by MemProfileEnv is a
// whole pprof profile (a gzip stream naming inuse_space) under the name
// with "%p" made this process's id; a file that cannot be created is an
// error.
func TestHeapProfileWritten(t *testing.T) {
	dir := t.TempDir()
	if err := writeHeapProfile(filepath.Join(dir, "heap-%p.prof")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "heap-"+strconv.Itoa(os.Getpid())+".prof"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read-only
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("not a pprof profile: %v", err)
	}
	b, err := io.ReadAll(z)
	if err != nil || !strings.Contains(string(b), "inuse_space") {
		t.Fatalf("not a heap profile (%d bytes): %v", len(b), err)
	}
	if err := writeHeapProfile(filepath.Join(dir, "no", "such", "dir")); err == nil {
		t.Error("an uncreatable profile file was accepted")
	}
}

// TestCPUProfileWritten: the profile named by CPUProfileEnv is complete
// (a whole gzip stream, as pprof writes it) once stop returns: at the
// command's return, also after SIGINT or SIGTERM.
func TestCPUProfileWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err := startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read-only
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("not a pprof profile: %v", err)
	}
	b, err := io.ReadAll(z)
	if err != nil || len(b) == 0 {
		t.Fatalf("profile cut short (%d bytes): %v", len(b), err)
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil {
		t.Error("an uncreatable profile file was accepted")
	}
}

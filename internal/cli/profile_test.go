package cli

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestHeapProfilesEvery: with MemProfileEveryEnv, heap profiles are
// written to FILE.1, FILE.2, ... while the command runs, none after it
// stops; an interval that is not a positive duration is an error.
func TestHeapProfilesEvery(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "heap-%p.prof")
	stop, err := startHeapProfiles(path, "5ms")
	if err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "heap-"+strconv.Itoa(os.Getpid())+".prof.2")
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(second); err == nil {
			break
		}
	}
	stop()
	files, _ := filepath.Glob(filepath.Join(dir, "heap-*.prof.*"))
	if len(files) < 2 {
		t.Fatalf("profiles written: %q, want .1 and .2 at least", files)
	}
	time.Sleep(20 * time.Millisecond) // four intervals: none may come after stop
	if after, _ := filepath.Glob(filepath.Join(dir, "heap-*.prof.*")); len(after) != len(files) {
		t.Errorf("%d profiles after stop, %d before", len(after), len(files))
	}
	for _, bad := range []string{"1", "-1s", "0s", "soon"} {
		if _, err := startHeapProfiles(path, bad); err == nil {
			t.Errorf("interval %q accepted", bad)
		}
	}
	if stop, err := startHeapProfiles("", "1s"); err != nil {
		t.Errorf("no profile file: %v", err)
	} else {
		stop()
	}
}

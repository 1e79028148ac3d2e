package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// root is the repository, from this package's directory.
const root = "../.."

// hostBinary returns the rtscope that make build wrote for this machine.
func hostBinary(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(root, "rtscope"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no rtscope binary to package (run make build first): %v", err)
	}
	return bin
}

// testOptions packages this machine's binary into dir.
func testOptions(t *testing.T, out string) options {
	return options{root: root, arch: runtime.GOARCH, bin: hostBinary(t), version: "v1.2.0-3-gabcdef0", out: out,
		mtime: time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)}
}

// run runs a command and returns its standard output, failing the test
// when it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %v: %v\n%s", name, args, err, msg)
	}
	return string(out)
}

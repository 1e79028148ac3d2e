package scenario

import (
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

// TestMain runs the tests like rtscope runs, without asynchronous
// preemption, and one RT test package at a time: packages are tested in
// parallel, and two RT workloads on the same CPU would skew each other.
func TestMain(m *testing.M) {
	workload.NoAsyncPreempt()
	if len(os.Args) > 2 && os.Args[1] == childArg {
		os.Exit(runChild(os.Args[2:]))
	}
	// Fuzzing runs no real-time test, and its workers are this binary too:
	// they would wait forever for the coordinator's lock.
	if slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.fuzz") }) {
		os.Exit(m.Run())
	}
	if f, err := os.OpenFile(os.TempDir()+"/rtscope-rt-tests.lock", os.O_CREATE|os.O_RDWR, 0o666); err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_EX) // released when the process exits
	}
	os.Exit(m.Run())
}

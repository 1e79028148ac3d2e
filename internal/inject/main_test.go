package inject

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

// TestMain runs the tests like rtscope runs, without asynchronous
// preemption, and one RT test package at a time: packages are tested in
// parallel, and two RT workloads on the same CPU would skew each other.
func TestMain(m *testing.M) {
	workload.NoAsyncPreempt()
	if f, err := os.OpenFile(os.TempDir()+"/rtscope-rt-tests.lock", os.O_CREATE|os.O_RDWR, 0o666); err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_EX) // released when the process exits
	}
	os.Exit(m.Run())
}

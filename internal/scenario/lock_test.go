package scenario

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CPU claims live in a root-only directory: a lock file another user could
// hold (in a world-writable $TMPDIR) would block root's scenarios.
func TestClaimCPULockDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	saved := lockDir
	defer func() { lockDir = saved }()

	lockDir = filepath.Join(t.TempDir(), "rtscope")
	release, err := claimCPU(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(lockDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("lock directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	lf, err := os.Stat(filepath.Join(lockDir, "scenario-cpu0.lock"))
	if err != nil || lf.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v, %v; want mode 0600", lf.Mode(), err)
	}
	// Held: a second claim waits, and gives up with its context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := claimCPU(ctx, 0); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("second claim of a held CPU: %v; want it to wait until interrupted", err)
	}
	release()

	// A directory others can write is refused, naming it.
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	lockDir = open
	if _, err := claimCPU(context.Background(), 0); err == nil || !strings.Contains(err.Error(), open) {
		t.Errorf("world-writable lock directory: %v; want it refused", err)
	}
}

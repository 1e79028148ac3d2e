package engine

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// errReader returns its errors one read at a time, then io.EOF.
type errReader struct{ errs []error }

func (r *errReader) Read([]byte) (int, error) {
	if len(r.errs) == 0 {
		return 0, io.EOF
	}
	err := r.errs[0]
	r.errs = r.errs[1:]
	return 0, err
}

// TestReadIter: Scan reads the task iterator to io.EOF, through the
// kernel's EAGAIN pauses (a million tasks per read), and returns any other
// read error instead of taking it for the end (tasks left unscanned).
func TestReadIter(t *testing.T) {
	if err := readIter(&errReader{}, nil); err != nil {
		t.Errorf("at EOF: %v", err)
	}
	eagain := &os.PathError{Op: "read", Path: "iter", Err: unix.EAGAIN}
	r := &errReader{errs: []error{eagain, eagain, nil}}
	if err := readIter(r, nil); err != nil || len(r.errs) != 0 {
		t.Errorf("after EAGAIN pauses: %v, %d reads left", err, len(r.errs))
	}
	eio := &os.PathError{Op: "read", Path: "iter", Err: unix.EIO}
	r = &errReader{errs: []error{nil, eio, nil}}
	if err := readIter(r, nil); !errors.Is(err, unix.EIO) || len(r.errs) != 1 {
		t.Errorf("a read error: %v (%d reads left), want EIO returned at once", err, len(r.errs))
	}
}

// TestScanWithCallsBetweenBatches: a scan that tracks more than ScanBatch
// tasks calls its function between batches (at least once per ScanBatch
// tasks tracked, so that a session polls while the scan runs), and every
// task is tracked. Both engines.
func TestScanWithCallsBetweenBatches(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	// A name of its own, so that only these are wanted.
	bin := filepath.Join(t.TempDir(), "rts-scanned")
	if err := os.Symlink(sleep, bin); err != nil {
		t.Fatal(err)
	}
	const n = 2*ScanBatch + 22
	for range n {
		c := exec.Command(bin, "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	for _, engine := range []string{EngineBTF, EngineClassic} {
		t.Run(engine, func(t *testing.T) {
			e := liveEngine(t, Config{Engine: engine})
			if err := e.WantComm("rts-scanned", 0); err != nil {
				t.Fatal(err)
			}
			calls := 0
			if err := e.ScanWith(func() { calls++ }); err != nil {
				t.Fatal(err)
			}
			all, err := e.AllStats()
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != n {
				t.Errorf("%d tasks tracked, want %d", len(all), n)
			}
			if want := n / ScanBatch; calls < want {
				t.Errorf("called %d times between batches, want at least %d for %d tasks", calls, want, n)
			}
		})
	}
}

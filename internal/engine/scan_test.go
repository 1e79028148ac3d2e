package engine

import (
	"errors"
	"io"
	"os"
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
	if err := readIter(&errReader{}); err != nil {
		t.Errorf("at EOF: %v", err)
	}
	eagain := &os.PathError{Op: "read", Path: "iter", Err: unix.EAGAIN}
	r := &errReader{errs: []error{eagain, eagain, nil}}
	if err := readIter(r); err != nil || len(r.errs) != 0 {
		t.Errorf("after EAGAIN pauses: %v, %d reads left", err, len(r.errs))
	}
	eio := &os.PathError{Op: "read", Path: "iter", Err: unix.EIO}
	r = &errReader{errs: []error{nil, eio, nil}}
	if err := readIter(r); !errors.Is(err, unix.EIO) || len(r.errs) != 1 {
		t.Errorf("a read error: %v (%d reads left), want EIO returned at once", err, len(r.errs))
	}
}

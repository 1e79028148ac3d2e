// Package outfile writes rtscope's output files (--json, --perfetto,
// --html, timerlat -t) so that a run never loses them nor destroys what
// was there: each is opened when the run starts, so a bad path fails at
// once and not after an hour of measuring; it is written to a temporary
// file beside its destination (O_EXCL|O_NOFOLLOW), synced, and renamed
// into place only when complete, so a full disk keeps the previous file
// and a symlink at the destination is replaced, not followed. Existing
// special files (/dev/stdout, a FIFO, /dev/null) are written in place.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// File is one output file being written. Not safe for concurrent use.
type File struct {
	path string
	tmp  string // "" when written in place
	f    *os.File
	done bool
	err  error // the first write error: Fprintf-style writers drop theirs
}

// Create opens the output file of path ("-": stdout, written in place).
func Create(path string) (*File, error) {
	if path == "" {
		return nil, errors.New("empty file name")
	}
	if path == "-" {
		return &File{path: path, f: os.Stdout}, nil
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory", path)
		}
		if !fi.Mode().IsRegular() {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return nil, err
			}
			return &File{path: path, f: f}, nil
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("directory of %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	for i := 0; ; i++ {
		tmp := filepath.Join(dir, "."+base+".rtscope-"+strconv.FormatInt(time.Now().UnixNano()+int64(i), 36))
		fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if errors.Is(err, unix.EEXIST) && i < 100 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("creating %s: %w", path, err)
		}
		return &File{path: path, tmp: tmp, f: os.NewFile(uintptr(fd), tmp)}, nil
	}
}

// Path is the destination.
func (o *File) Path() string { return o.path }

// Writer is where the contents go; its first error is kept for Commit.
func (o *File) Writer() io.Writer { return o }

// Write implements io.Writer, remembering the first error.
func (o *File) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.f.Write(p)
	if err != nil {
		o.err = err
	}
	return n, err
}

// Commit completes the file: synced and renamed into place (or, written in
// place, closed). Every error is returned: a file that is not complete is
// not pretended to be.
func (o *File) Commit() error {
	if o.done {
		return nil
	}
	o.done = true
	if o.err != nil {
		if o.f != os.Stdout {
			o.f.Close() //nolint:errcheck // abandoned: the write error is returned
		}
		if o.tmp != "" {
			os.Remove(o.tmp) //nolint:errcheck // best effort: a temporary file
		}
		return fmt.Errorf("writing %s: %w", o.path, o.err)
	}
	if o.f == os.Stdout {
		return nil
	}
	if o.tmp == "" {
		if err := o.f.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", o.path, err)
		}
		return nil
	}
	err := o.f.Sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.tmp, o.path)
	}
	if err != nil {
		os.Remove(o.tmp) //nolint:errcheck // best effort: a temporary file
		return fmt.Errorf("writing %s: %w (the previous file, if any, is kept)", o.path, err)
	}
	return nil
}

// Abort drops the file: the temporary one is removed, the destination left
// as it was. Safe after Commit.
func (o *File) Abort() {
	if o == nil || o.done {
		return
	}
	o.done = true
	if o.f != os.Stdout {
		o.f.Close() //nolint:errcheck // aborted: nothing of it is kept
	}
	if o.tmp != "" {
		os.Remove(o.tmp) //nolint:errcheck // best effort: a temporary file
	}
}

// Fill runs write on the file and commits it, or aborts it on an error.
func (o *File) Fill(write func(io.Writer) error) error {
	if err := write(o); err != nil {
		o.Abort()
		return fmt.Errorf("writing %s: %w", o.path, err)
	}
	return o.Commit()
}

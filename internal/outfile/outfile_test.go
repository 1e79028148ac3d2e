package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommitReplacesAtomically(t *testing.T) {
	d := t.TempDir()
	p := filepath.Join(d, "r.json")
	os.WriteFile(p, []byte("old"), 0o644)
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f.Writer(), "new")
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("destination changed before the commit: %q", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("after the commit: %q", b)
	}
	if ents, _ := os.ReadDir(d); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

func TestFailureKeepsThePreviousFile(t *testing.T) {
	d := t.TempDir()
	p := filepath.Join(d, "r.json")
	os.WriteFile(p, []byte("old"), 0o644)
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fill(func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("disk full") }); err == nil {
		t.Error("a failed write was committed")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("previous file lost: %q", b)
	}
	if ents, _ := os.ReadDir(d); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// A symlink at the destination is replaced, its target untouched (as root,
// following it would overwrite any file).
func TestSymlinkNotFollowed(t *testing.T) {
	d := t.TempDir()
	victim, p := filepath.Join(d, "victim"), filepath.Join(d, "r.json")
	os.WriteFile(victim, []byte("precious"), 0o644)
	os.Symlink(victim, p)
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fill(func(w io.Writer) error { _, err := io.WriteString(w, "{}"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("symlink target overwritten: %q", b)
	}
	if fi, _ := os.Lstat(p); fi.Mode()&os.ModeSymlink != 0 {
		t.Error("the symlink is still there")
	}
}

// Bad paths fail at Create, before any measuring.
func TestBadPathsFailAtOnce(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"", d, filepath.Join(d, "missing", "r.json"), filepath.Join(d, "r.json", "x")} {
		if p == filepath.Join(d, "r.json", "x") {
			os.WriteFile(filepath.Join(d, "r.json"), nil, 0o644)
		}
		if f, err := Create(p); err == nil {
			f.Abort()
			t.Errorf("Create(%q) accepted", p)
		}
	}
}

// A special file is written in place: /dev/full reports its error.
func TestSpecialFileInPlace(t *testing.T) {
	f, err := Create("/dev/full")
	if err != nil {
		t.Fatal(err)
	}
	err = f.Fill(func(w io.Writer) error { _, err := io.WriteString(w, strings.Repeat("x", 10)); return err })
	if err == nil {
		t.Error("writing /dev/full succeeded")
	}
	if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Errorf("/dev/full is no longer a device: %v", err)
	}
}

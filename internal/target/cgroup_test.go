package target

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestCgroup: a cgroup target resolves to the same directory and id as a
// path under the cgroup v2 mount, a path from the hierarchy's root, and
// a unit name; wrong ones are refused with one sentence (needs root: the
// test creates a cgroup).
func TestCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root): the test creates a cgroup")
	}
	root, err := CgroupRoot()
	if err != nil {
		t.Fatal(err)
	}
	name := "rtscope-test-" + strconv.Itoa(os.Getpid()) + ".scope"
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	for _, spec := range []string{dir, "/" + name, name} {
		d, id, err := Cgroup(spec)
		if err != nil || d != dir || id != ino {
			t.Errorf("Cgroup(%q) = %q %d %v, want %q %d", spec, d, id, err, dir, ino)
		}
	}
	for spec, want := range map[string]string{
		"":                      "needs a path",
		"/no-such-cgroup":       "does not exist",
		"nothing":               "neither a path nor a systemd unit name",
		"no-such-unit.service":  "no cgroup named no-such-unit.service",
		"../../etc":             "outside",
		"/" + name + "/../../x": "outside",
	} {
		_, _, err := Cgroup(spec)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Cgroup(%q): %v, want one line with %q", spec, err, want)
		}
	}
	// A directory that is not on the cgroup v2 hierarchy.
	if _, _, err := CgroupIn(t.TempDir(), "/"); err == nil || !strings.Contains(err.Error(), "not on the cgroup v2 hierarchy") {
		t.Errorf("a plain directory: %v", err)
	}
}

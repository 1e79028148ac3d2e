package doctor

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// deniedFS refuses, as the kernel refuses a user other than root, every
// path below denied (tracefs mounted mode 0700).
type deniedFS struct {
	fstest.MapFS
	denied []string
}

func (d deniedFS) refused(name string) bool {
	for _, p := range d.denied {
		if strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

func (d deniedFS) Open(name string) (fs.File, error) {
	if d.refused(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.MapFS.Open(name)
}

func (d deniedFS) Stat(name string) (fs.FileInfo, error) {
	if d.refused(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrPermission}
	}
	return d.MapFS.Stat(name)
}

// tracefs mounted but root's only (mode 0700) is present and unreadable to
// this user, not missing; readable, it is present; absent, missing.
func TestTracefsUnreadableIsNotMissing(t *testing.T) {
	tracefs := fstest.MapFS{
		"sys/kernel/tracing":                 {Mode: fs.ModeDir | 0o700},
		"sys/kernel/tracing/events/sched":    {Mode: fs.ModeDir | 0o755},
		"sys/kernel/btf/vmlinux":             {Data: []byte("btf")},
		"sys/kernel/debug":                   {Mode: fs.ModeDir | 0o700},
		"sys/kernel/debug/tracing/events/.x": {Data: nil},
	}
	for _, c := range []struct {
		name                string
		fsys                fs.FS
		present, readable   bool
		evidence, notInEvid string
	}{
		{"root", tracefs, true, true, "tracefs present", "missing"},
		{"user", deniedFS{tracefs, []string{"sys/kernel/tracing", "sys/kernel/debug"}}, true, false, "not readable by this user (/sys/kernel/tracing, mode 0700)", "missing"},
		{"none", fstest.MapFS{"sys/kernel/btf/vmlinux": {Data: []byte("btf")}}, false, false, "tracefs missing", "readable"},
	} {
		m := &machine{fsys: c.fsys}
		chk := checkRtscope(m, &Env{})
		if chk.Data["tracefs"] != c.present || chk.Data["tracefs_readable"] != c.readable ||
			!strings.Contains(chk.Evidence, c.evidence) || strings.Contains(chk.Evidence, c.notInEvid) {
			t.Errorf("%s: data %v, evidence %q; want present %v readable %v, %q", c.name, chk.Data, chk.Evidence, c.present, c.readable, c.evidence)
		}
		if c.present && !c.readable && !strings.Contains(chk.Remedy, "root") {
			t.Errorf("%s: remedy %q does not say to run as root", c.name, chk.Remedy)
		}
	}
}

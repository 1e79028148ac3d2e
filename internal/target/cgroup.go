package target

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// CgroupRoot returns where the cgroup v2 hierarchy is mounted: its first
// cgroup2 mount in /proc/self/mountinfo (/sys/fs/cgroup on unified hosts,
// /sys/fs/cgroup/unified on hybrid ones such as this VM), or why none is.
func CgroupRoot() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("finding the cgroup v2 mount: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" {
			return unescapeMount(f[4]), nil
		}
	}
	return "", errors.New("cgroup v2 is not mounted (no cgroup2 in /proc/self/mountinfo): cgroup targets need it")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Cgroup is CgroupIn under CgroupRoot.
func Cgroup(spec string) (dir string, id uint64, err error) {
	root, err := CgroupRoot()
	if err != nil {
		return "", 0, fmt.Errorf("cgroup %s: %w", spec, err)
	}
	return CgroupIn(root, spec)
}

// unitSuffixes name systemd units whose cgroup may be given by name.
var unitSuffixes = []string{".service", ".scope", ".slice"}

// CgroupIn resolves a cgroup target under root (the cgroup v2 mount): a
// path under it (absolute, or as systemd and Kubernetes print it, from
// the hierarchy's root: /system.slice/x.service,
// /kubepods.slice/kubepods-pod1234.slice), or a systemd unit's name
// (x.service, x.scope, x.slice), found in the tree. It returns the
// directory and its cgroup id (on cgroup v2 the directory's inode number,
// what the kernel's cgroup kernfs node id is), or one sentence naming what
// is wrong. Safe for concurrent use.
func CgroupIn(root, spec string) (dir string, id uint64, err error) {
	if spec == "" {
		return "", 0, errors.New("a cgroup target needs a path or a systemd unit name")
	}
	switch {
	case strings.HasPrefix(spec, root+"/") || spec == root:
		dir = filepath.Clean(spec)
	case strings.Contains(spec, "/"):
		dir = filepath.Join(root, spec)
	default:
		dir, err = findUnit(root, spec)
		if err != nil {
			return "", 0, err
		}
	}
	if rel, err := filepath.Rel(root, dir); err != nil || strings.HasPrefix(rel, "..") {
		return "", 0, fmt.Errorf("cgroup %s is outside %s", spec, root)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return "", 0, fmt.Errorf("cgroup %s does not exist (no directory %s)", spec, dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", 0, fmt.Errorf("cgroup %s: %s is not on the cgroup v2 hierarchy (mounted at %s)", spec, dir, root)
	}
	return dir, fi.Sys().(*syscall.Stat_t).Ino, nil
}

// findUnit finds the cgroup of a systemd unit by its name.
func findUnit(root, name string) (string, error) {
	unit := false
	for _, s := range unitSuffixes {
		unit = unit || strings.HasSuffix(name, s)
	}
	if !unit {
		return "", fmt.Errorf("cgroup %q is neither a path nor a systemd unit name (NAME.service, .scope or .slice)", name)
	}
	var found []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // unreadable parts are skipped: the search is best effort
		}
		if d.Name() == name {
			found = append(found, p)
			return fs.SkipDir
		}
		return nil
	})
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no cgroup named %s under %s: is the unit running?", name, root)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%d cgroups are named %s (%s): give the path of one", len(found), name, strings.Join(found, ", "))
}

// Place is where a task runs, as a fleet dashboard groups it: its systemd
// service and its Kubernetes pod, each "" when it has none.
type Place struct {
	Unit string // the innermost NAME.service of its cgroup path
	Pod  string // the pod's UID, from a kubepods cgroup path
}

// CgroupPlace reads a place from a cgroup v2 path as /proc/TID/cgroup
// gives it (from the hierarchy's root):
//
//	/system.slice/foo.service                    Unit foo.service
//	/user.slice/user-0.slice/user@0.service/app.slice/bar.service   Unit bar.service
//	/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b_3c.slice/cri-containerd-ID.scope
//	                                             Pod 1a2b-3c (systemd driver: '_' for '-')
//	/kubepods/besteffort/pod1a2b-3c/ID           Pod 1a2b-3c (cgroupfs driver)
//
// Scopes and slices (sessions, containers, transient runs) are not units
// here: their names change with every login or restart, and a label
// taking them would grow without bound. Pure and safe for concurrent use.
func CgroupPlace(path string) Place {
	var p Place
	inKube := false
	for _, c := range strings.Split(path, "/") {
		switch {
		case c == "":
		case strings.HasPrefix(c, "kubepods"):
			inKube = true
			// systemd driver: kubepods[-QOS]-podUID.slice
			if i := strings.LastIndex(c, "-pod"); i >= 0 && strings.HasSuffix(c, ".slice") {
				if uid, ok := podUID(strings.ReplaceAll(c[i+4:len(c)-len(".slice")], "_", "-")); ok {
					p.Pod = uid
				}
			}
		case inKube && p.Pod == "" && strings.HasPrefix(c, "pod"):
			// cgroupfs driver: /kubepods[/QOS]/podUID
			if uid, ok := podUID(c[3:]); ok {
				p.Pod = uid
			}
		case strings.HasSuffix(c, ".service") && len(c) > len(".service"):
			p.Unit = c
		}
	}
	return p
}

// podUID accepts a pod UID: hexadecimal digits and dashes (a UUID).
func podUID(s string) (string, bool) {
	if s == "" || len(s) > 64 {
		return "", false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') && r != '-' {
			return "", false
		}
	}
	return s, true
}

// TaskPlace is the CgroupPlace of task tid's cgroup v2 (the "0::" line of
// /proc/TID/cgroup), or an error when the task is gone. Safe for
// concurrent use.
func TaskPlace(tid uint32) (Place, error) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/cgroup")
	if err != nil {
		return Place{}, fmt.Errorf("cgroup of task %d: %w", tid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			return CgroupPlace(path), nil
		}
	}
	return Place{}, fmt.Errorf("task %d has no cgroup v2 (no 0:: line in /proc/%d/cgroup)", tid, tid)
}

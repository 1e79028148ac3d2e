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

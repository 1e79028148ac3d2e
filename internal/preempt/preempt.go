// Package preempt finds the kernel's preemption model (none, voluntary,
// full, lazy, rt) and where it was read, without debugfs when it is not
// mounted or readable: /sys/kernel/realtime, uname -v, the kernel's build
// configuration and the preempt= boot option. It is the one place that
// knows how: doctor checks it, and the watch session passes it to the
// analysis, which explains non-preemptible sections by it.
package preempt

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// Model is a kernel preemption model, written as its name in JSON; Unknown
// is empty. Immutable: safe for concurrent use.
type Model string

// Models.
const (
	Unknown   Model = ""
	None      Model = "none"
	Voluntary Model = "voluntary"
	Full      Model = "full"
	Lazy      Model = "lazy"
	RT        Model = "rt"
	// NoneOrVoluntary: uname -v marks PREEMPT, PREEMPT_DYNAMIC and
	// PREEMPT_RT builds; none and voluntary leave no mark there.
	NoneOrVoluntary Model = "none-or-voluntary"
)

// String returns the model's name.
func (m Model) String() string { return string(m) }

// MarshalText writes the name.
func (m Model) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText reads a name.
func (m *Model) UnmarshalText(b []byte) error { *m = Model(b); return nil }

// Kernel holds the facts of the running kernel the model is decided from,
// read once (Read). Not modified after Read: safe for concurrent reads.
type Kernel struct {
	fsys       fs.FS
	Release    string            // uname -r
	Version    string            // uname -v
	Cmdline    map[string]string // boot parameters before "--" (last value wins; flags map to "")
	Config     map[string]string // build options (CONFIG_*), nil when unreadable
	ConfigFrom string            // where Config was read
}

// Read reads the kernel's facts from fsys, a root file system ("/" on the
// live system, a fixture in tests). What cannot be read stays empty.
func Read(fsys fs.FS) *Kernel {
	k := &Kernel{fsys: fsys, Cmdline: map[string]string{}}
	k.Release, _ = k.read("proc/sys/kernel/osrelease")
	k.Version, _ = k.read("proc/sys/kernel/version")
	if s, ok := k.read("proc/cmdline"); ok {
		for _, f := range strings.Fields(s) {
			if f == "--" {
				break // what follows is init's
			}
			key, v, _ := strings.Cut(f, "=")
			k.Cmdline[key] = v
		}
	}
	k.loadConfig()
	return k
}

func (k *Kernel) read(name string) (string, bool) {
	b, err := fs.ReadFile(k.fsys, name)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// loadConfig reads the build options from /proc/config.gz, else
// /boot/config-$(uname -r).
func (k *Kernel) loadConfig() {
	var r io.Reader
	if f, err := k.fsys.Open("proc/config.gz"); err == nil {
		defer f.Close() //nolint:errcheck // read-only
		if z, err := gzip.NewReader(f); err == nil {
			r, k.ConfigFrom = z, "/proc/config.gz"
		}
	}
	if r == nil && k.Release != "" {
		if b, err := fs.ReadFile(k.fsys, "boot/config-"+k.Release); err == nil {
			r, k.ConfigFrom = bytes.NewReader(b), "/boot/config-"+k.Release
		}
	}
	if r == nil {
		return
	}
	k.Config = map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if key, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(key, "CONFIG_") {
			k.Config[key] = v
		}
	}
}

// Model decides the preemption model and says where it was read, in the
// order the kernel exposes it: PREEMPT_RT first, then a PREEMPT_DYNAMIC
// kernel's current mode (debugfs, else the preempt= boot option), then the
// build configuration, then uname -v.
func (k *Kernel) Model() (model Model, source string) {
	if s, ok := k.read("sys/kernel/realtime"); ok && s == "1" {
		return RT, "/sys/kernel/realtime = 1"
	}
	if strings.Contains(k.Version, "PREEMPT_RT") {
		return RT, "uname -v: " + k.Version
	}
	if k.Config["CONFIG_PREEMPT_RT"] == "y" {
		return RT, k.ConfigFrom + ": CONFIG_PREEMPT_RT=y"
	}
	dynamic := strings.Contains(k.Version, "PREEMPT_DYNAMIC") || k.Config["CONFIG_PREEMPT_DYNAMIC"] == "y"
	if dynamic {
		// The current mode: debugfs marks it "none voluntary (full) lazy".
		if s, ok := k.read("sys/kernel/debug/sched/preempt"); ok {
			if i, j := strings.Index(s, "("), strings.Index(s, ")"); i >= 0 && j > i {
				return Model(s[i+1 : j]), "PREEMPT_DYNAMIC, current mode from /sys/kernel/debug/sched/preempt"
			}
		}
		if v, ok := k.Cmdline["preempt"]; ok && v != "" {
			return Model(v), "PREEMPT_DYNAMIC, preempt=" + v + " on the kernel command line"
		}
	}
	for _, o := range []struct {
		opt   string
		model Model
	}{
		{"CONFIG_PREEMPT_LAZY", Lazy}, {"CONFIG_PREEMPT", Full},
		{"CONFIG_PREEMPT_VOLUNTARY", Voluntary}, {"CONFIG_PREEMPT_NONE", None},
	} {
		if k.Config[o.opt] == "y" {
			src := k.ConfigFrom + ": " + o.opt + "=y"
			if dynamic {
				src = "PREEMPT_DYNAMIC, no preempt= boot option and debugfs unreadable: the build default (" + src + ")"
			}
			return o.model, src
		}
	}
	noConfig := "no kernel config readable (/proc/config.gz, /boot/config-" + k.Release + ")"
	switch {
	case dynamic:
		return Unknown, "PREEMPT_DYNAMIC (uname -v) but its mode is not visible: debugfs unreadable, no preempt= boot option, " + noConfig
	case strings.Contains(k.Version, " PREEMPT ") || strings.HasSuffix(k.Version, " PREEMPT"):
		return Full, "uname -v: " + k.Version
	case k.Version != "":
		return NoneOrVoluntary, "uname -v names no preemption (" + k.Version + "), " + noConfig
	}
	return Unknown, "uname -v unreadable, " + noConfig
}

// Detect returns the running kernel's model, read once (the model changes
// only with a reboot, or a write to debugfs nobody makes mid-run). Safe
// for concurrent use.
var Detect = sync.OnceValue(func() Model {
	m, _ := Read(os.DirFS("/")).Model()
	return m
})

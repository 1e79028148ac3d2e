package preempt

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestPreemptionSources: the model's source, in the order the kernel
// exposes it.
func TestPreemptionSources(t *testing.T) {
	cfg := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	dyn := cfg("#1 SMP PREEMPT_DYNAMIC\n")
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		model Model
		src   string
	}{
		{"realtime file", fstest.MapFS{"sys/kernel/realtime": cfg("1\n")}, "rt", "/sys/kernel/realtime"},
		{"uname PREEMPT_RT", fstest.MapFS{"proc/sys/kernel/version": cfg("#1 SMP PREEMPT_RT Tue\n")}, "rt", "uname -v"},
		{"debugfs wins over cmdline", fstest.MapFS{"proc/sys/kernel/version": dyn,
			"sys/kernel/debug/sched/preempt": cfg("none voluntary (full) lazy\n"), "proc/cmdline": cfg("preempt=none\n")}, "full", "debug/sched/preempt"},
		{"cmdline", fstest.MapFS{"proc/sys/kernel/version": dyn, "proc/cmdline": cfg("ro preempt=lazy quiet\n")}, "lazy", "preempt=lazy on the kernel command line"},
		{"cmdline after -- is init's", fstest.MapFS{"proc/sys/kernel/version": dyn, "proc/cmdline": cfg("ro -- preempt=full\n"),
			"proc/sys/kernel/osrelease": cfg("6.9\n"), "boot/config-6.9": cfg("CONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPT_VOLUNTARY=y\n")}, "voluntary", "the build default"},
		{"plain PREEMPT", fstest.MapFS{"proc/sys/kernel/version": cfg("#1 SMP PREEMPT Mon\n")}, "full", "uname -v"},
		{"no mark in uname", fstest.MapFS{"proc/sys/kernel/version": cfg("#1 SMP Debian 6.1.192-2\n")}, "none-or-voluntary", "names no preemption"},
		{"debugfs (none)", fstest.MapFS{"proc/sys/kernel/version": dyn, "sys/kernel/debug/sched/preempt": cfg("(none) voluntary full lazy\n")}, "none", "debug/sched/preempt"},
		{"dynamic, mode unknown", fstest.MapFS{"proc/sys/kernel/version": dyn}, "", "its mode is not visible"},
		{"nothing", fstest.MapFS{}, "", "uname -v unreadable"},
	} {
		model, src := Read(tc.files).Model()
		if model != tc.model || !strings.Contains(src, tc.src) {
			t.Errorf("%s: %q from %q, want %q from ...%s...", tc.name, model, src, tc.model, tc.src)
		}
	}
}

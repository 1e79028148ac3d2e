package doctor

import (
	"strings"
	"testing"
	"testing/fstest"
)

// rt_throttling: the fair server's share where debugfs shows it (6.12+);
// sched_rt_runtime_us -1 passes only on a kernel before 6.12, where no fair
// server throttles.
func TestRTThrottlingFairServer(t *testing.T) {
	fsys := func(release, runtime string, fair bool) fstest.MapFS {
		m := fstest.MapFS{
			"proc/sys/kernel/osrelease":           {Data: []byte(release + "\n")},
			"proc/sys/kernel/sched_rt_runtime_us": {Data: []byte(runtime + "\n")},
			"proc/sys/kernel/sched_rt_period_us":  {Data: []byte("1000000\n")},
		}
		if fair {
			m["sys/kernel/debug/sched/fair_server/cpu0/runtime"] = &fstest.MapFile{Data: []byte("50000000\n")}
			m["sys/kernel/debug/sched/fair_server/cpu0/period"] = &fstest.MapFile{Data: []byte("1000000000\n")}
		}
		return m
	}
	cases := []struct {
		name   string
		fs     fstest.MapFS
		status Status
		words  string
	}{
		{"fair server read", fsys("6.18.0", "950000", true), Warn, "lose the CPU for 50000 us of every 1000000 us (the fair server)"},
		{"6.18, debugfs unmounted", fsys("6.18.0", "-1", false), Warn, "on this 6.12+ kernel the fair server throttles"},
		{"6.1, unlimited", fsys("6.1.0-31-rt-amd64", "-1", false), Pass, "sched_rt_runtime_us -1"},
		{"6.1, default", fsys("6.1.0", "950000", false), Warn, "more than 950000 us of a CPU in 1000000 us"},
	}
	for _, c := range cases {
		ck := checkRTThrottling(load(c.fs), nil)
		if ck.Status != c.status || !strings.Contains(ck.Evidence, c.words) {
			t.Errorf("%s: %s %q, want %s with %q", c.name, ck.Status, ck.Evidence, c.status, c.words)
		}
	}
}

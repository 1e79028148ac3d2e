package sched

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestReadThrottling(t *testing.T) {
	fsys := fstest.MapFS{
		"proc/sys/kernel/sched_rt_runtime_us":             {Data: []byte("950000\n")},
		"proc/sys/kernel/sched_rt_period_us":              {Data: []byte("1000000\n")},
		"sys/kernel/debug/sched/fair_server/cpu1/runtime": {Data: []byte("50000000\n")},
		"sys/kernel/debug/sched/fair_server/cpu1/period":  {Data: []byte("1000000000\n")},
		"sys/kernel/debug/sched/fair_server/cpu0/runtime": {Data: []byte("20000000\n")},
		"sys/kernel/debug/sched/fair_server/cpu0/period":  {Data: []byte("1000000000\n")},
	}
	th := ReadThrottling(fsys)
	if th.RTRuntimeNs == nil || *th.RTRuntimeNs != 950_000_000 || *th.RTPeriodNs != 1_000_000_000 {
		t.Fatalf("rt bandwidth %v/%v", th.RTRuntimeNs, th.RTPeriodNs)
	}
	if len(th.FairServer) != 2 || th.FairServer[0].CPU != 0 || th.FairServer[0].RuntimeNs != 20_000_000 {
		t.Fatalf("fair server %+v", th.FairServer)
	}
	if r, p := th.Share(1); r != 50_000_000 || p != 1_000_000_000 {
		t.Errorf("share of CPU 1 %d/%d", r, p)
	}
	if w := th.Words(); !strings.Contains(w, "CPU 0 20000/1000000 us") {
		t.Errorf("words %q", w)
	}
	// No debugfs: the rt_rq bandwidth gives the share, and the words say why.
	delete(fsys, "sys/kernel/debug/sched/fair_server/cpu1/runtime")
	delete(fsys, "sys/kernel/debug/sched/fair_server/cpu1/period")
	delete(fsys, "sys/kernel/debug/sched/fair_server/cpu0/runtime")
	delete(fsys, "sys/kernel/debug/sched/fair_server/cpu0/period")
	th = ReadThrottling(fsys)
	if th.FairServerUnreadable == "" || !strings.Contains(th.FairServerUnreadable, "debugfs not mounted") {
		t.Errorf("unreadable %q", th.FairServerUnreadable)
	}
	if r, p := th.Share(0); r != 50_000_000 || p != 1_000_000_000 {
		t.Errorf("share without a fair server %d/%d", r, p)
	}
	minus := fstest.MapFS{"proc/sys/kernel/sched_rt_runtime_us": {Data: []byte("-1")},
		"proc/sys/kernel/sched_rt_period_us": {Data: []byte("1000000")}}
	if th := ReadThrottling(minus); *th.RTRuntimeNs != -1 || !strings.Contains(th.Words(), "-1") {
		t.Errorf("unlimited: %v %q", *th.RTRuntimeNs, th.Words())
	}
}

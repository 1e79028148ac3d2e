package isolation

import (
	"strings"
	"testing"
)

// timerSnapshot is CPU 1 watched with a workload (control), its own
// sleeps, a timerfd a task of CPU 0 re-arms there, a wheel timer expired
// for idle CPU 0, and delayed work armed inside a callback.
func timerSnapshot() *Snapshot {
	return &Snapshot{
		DurationNs: 1e9, CPUs: []int{1}, Online: []int{0, 1}, Allow: []string{"control"},
		Tasks: []TaskRow{{CPU: 1, TID: 7, PID: 7, Comm: "control", Time: Time{Count: 10, Ns: 9e8, MaxNs: 1e8}}},
		Timers: []TimerRow{
			{CPU: 1, Func: "hrtimer_wakeup", Kind: "hrtimer", BaseCPU: 1, Time: Time{Count: 1000, Ns: 2e6, MaxNs: 9000}},
			{CPU: 1, Func: "timerfd_tmrproc", Kind: "hrtimer", BaseCPU: 1, Time: Time{Count: 300, Ns: 600000, MaxNs: 5000}},
			{CPU: 1, Func: "process_timeout", Kind: "timer", BaseCPU: 0, Time: Time{Count: 20, Ns: 80000, MaxNs: 7000}},
			{CPU: 1, Func: "delayed_work_timer_fn", Kind: "timer", BaseCPU: 1, Time: Time{Count: 4, Ns: 8000, MaxNs: 3000}},
			{CPU: 1, Func: "tcp_orphan_update", Kind: "timer", BaseCPU: 1, Time: Time{Count: 9, Ns: 9000, MaxNs: 1000}},
			{CPU: 1, Func: "dl_server_timer", Kind: "hrtimer", BaseCPU: 1, Time: Time{Count: 3, Ns: 3000, MaxNs: 1000}},
		},
		TimerArms: []TimerArmRow{
			{CPU: 1, Func: "hrtimer_wakeup", Kind: "hrtimer", TID: 7, PID: 7, Comm: "control", FromCPU: 1, Count: 1000},
			{CPU: 1, Func: "timerfd_tmrproc", Kind: "hrtimer", TID: 41, PID: 40, Comm: "armer", FromCPU: 1, Count: 500},
			{CPU: 1, Func: "timerfd_tmrproc", Kind: "hrtimer", TID: 42, PID: 40, Comm: "reader", FromCPU: 0, Count: 90},
			{CPU: 1, Func: "delayed_work_timer_fn", Kind: "timer", FromCPU: 1, Count: 4},
			{CPU: 1, Func: "tcp_orphan_update", Kind: "timer", FromCPU: 1, Count: 9},
			{CPU: 1, Func: "tcp_orphan_update", Kind: "timer", TID: 50, PID: 50, Comm: "apt", FromCPU: 1, Count: 1},
			// The idle task of CPU 0 (tid 0) arming in an interrupt: the kernel
			// placed the timer on a busy CPU (get_nohz_timer_target).
			{CPU: 1, Func: "dl_server_timer", Kind: "hrtimer", FromCPU: 0, Count: 3},
		},
	}
}

// The workload's own sleeps are no intrusion; a remote arming names its
// task first and gets the remote remedy even beside more local armings;
// a migrated wheel timer names timer migration; a kernel timer armed in
// a callback has no task and its function's remedy; a timer armed
// mostly in interrupts gets theirs, a task's arming beside them counted. Soft timers' time is
// their softirq's: only hard hrtimers add to the CPU's total.
func TestTimerIntrusions(t *testing.T) {
	c := Analyze(timerSnapshot()).CPUs[0]
	got := map[string]Intrusion{}
	for _, in := range c.Intrusions {
		if in.Cause == CauseTimer {
			got[in.What] = in
		}
	}
	if _, ok := got["hrtimer hrtimer_wakeup"]; ok {
		t.Errorf("the workload's own sleeps reported: %+v", got["hrtimer hrtimer_wakeup"])
	}
	want := map[string][2]string{
		"hrtimer timerfd_tmrproc": {"reader/42 on CPU 0 (90), armer/41 on CPU 1 (500)",
			"reader/42 arms hrtimer timerfd_tmrproc on CPU 1 from CPU 0: stop it during the real-time phase, or keep timers off CPU 1: " +
				"nohz_full=1 (or isolcpus=nohz,1) takes it out of the CPUs timers are placed on; kernel.timer_migration=0 keeps an idle CPU's timers on it"},
		"timer process_timeout (CPU 0's)": {"", "timer migration expired CPU 0's timers here while CPU 0 was idle: kernel.timer_migration=0, " +
			"or nohz_full=1, which keeps CPU 1 out of the migration hierarchy"},
		"timer delayed_work_timer_fn": {"interrupts on CPU 1 (4)", "delayed work queued onto CPU 1 (see the work rows): nohz_full=1 queues its timers on CPU 0"},
		"hrtimer dl_server_timer": {"interrupts on CPU 0 (3)", "an interrupt on CPU 0 arms hrtimer dl_server_timer on CPU 1 from CPU 0: stop it during the real-time phase, " +
			"or keep timers off CPU 1: nohz_full=1 (or isolcpus=nohz,1) takes it out of the CPUs timers are placed on; kernel.timer_migration=0 keeps an idle CPU's timers on it"},
		"timer tcp_orphan_update": {"apt/50 on CPU 1 (1), interrupts on CPU 1 (9)", "armed inside interrupts on CPU 1 (a kernel timer re-armed in its own callback, " +
			"or by a handler or softirq): nohz_full=1 keeps most kernel timers off the CPU"},
	}
	if len(got) != len(want) {
		t.Errorf("timer rows %v, want %d", got, len(want))
	}
	for what, w := range want {
		if in := got[what]; in.Sender != w[0] || in.Remedy != w[1] {
			t.Errorf("%s: sender %q remedy %q\nwant %q remedy %q", what, in.Sender, in.Remedy, w[0], w[1])
		}
	}
	if c.TotalNs != 603000 {
		t.Errorf("total %d ns, want 603000 (the hard hrtimers only: the wheel's run in the TIMER softirq)", c.TotalNs)
	}
	if c.Worst == nil || !strings.Contains(c.Judgement(1e9), "(hrtimer timerfd_tmrproc from reader/42 on CPU 0 (90))") {
		t.Errorf("judgement %q: want the timerfd's first armer", c.Judgement(1e9))
	}
}

package analysis

import "fmt"

// slackIRQAllowanceNs is how far past its hard expiry a timer's callback
// may run and still be inside its range: the interrupt's own latency. The
// kernel programs the clock event for the hard expiry, and the callback
// follows it by the wakeup from idle and the interrupt entry (on this VM,
// a pinned FIFO thread's timer wakeup onto an idle CPU: median 27 us, p99
// 126 us over 4000 wakeups, cpuidle.VMWakeNs). Twice the default 50 us
// slack, as slackVerdict allows when the granted slack is unknown.
const slackIRQAllowanceNs = 100_000

// releaseAt is the release whose timer interrupt delay (expiry -> its
// callback's entry) holds the item's start, nil if none.
func releaseAt(res *Result, it *Item) *Release {
	for i := range res.Releases {
		r := &res.Releases[i]
		if r.IRQDelayNs != nil && r.ExpiryT <= it.FirstT && it.FirstT < r.ExpiryT+max(*r.IRQDelayNs, 1) {
			return r
		}
	}
	return nil
}

// inSlack tells a release whose callback ran inside its timer's own range:
// after its soft expiry and by its hard one (plus the interrupt's own
// latency). The kernel chose to fire it then, to batch wakeups: not a
// late interrupt, whatever the CPU did meanwhile.
func inSlack(r *Release) bool {
	return r != nil && r.SlackNs != nil && *r.SlackNs > 0 && r.IRQDelayNs != nil &&
		*r.IRQDelayNs <= int64(*r.SlackNs+slackIRQAllowanceNs)
}

// grantedSlackVerdict explains (true) a dominant cause inside the release
// of a timer that fired within its granted range: timer slack, never the
// hypervisor, firmware or an exit from idle, since the timer was not due
// before its hard expiry. The callback's own run is not slack.
func grantedSlackVerdict(res *Result, s Subject, top *Item) bool {
	if top.Phase != PhaseRelease || top.Kind == KindOwnTimer {
		return false
	}
	r := releaseAt(res, top)
	if !inSlack(r) {
		return false
	}
	slack, delay := *r.SlackNs, uint64(max(*r.IRQDelayNs, 0))
	res.Cause = CauseRelease
	res.Culprit = "timer slack"
	res.Verdict = fmt.Sprintf("timer slack (%s allowed): its timer fired %s after its soft expiry, inside the range the kernel "+
		"granted it", us(slack), us(delay))
	if delay > slack {
		res.Verdict += fmt.Sprintf(" (the last %s, past its hard expiry, the interrupt's own latency)", us(delay-slack))
	}
	res.Verdict += "; " + slackOrigin(s, slack) + ". Not a late interrupt: the kernel fires a timer anywhere in its range, " +
		"to batch wakeups. A real-time policy has no slack; prctl(PR_SET_TIMERSLACK, 1) shrinks a thread's own; " +
		"periodic work sleeps to an absolute time with clock_nanosleep(TIMER_ABSTIME) at a real-time priority"
	return true
}

// slackGranted tells a verdict of timer slack inside a granted range:
// steal in it took nothing from the task, since its timer was not due.
func slackGranted(res *Result) bool {
	if res.Culprit != "timer slack" {
		return false
	}
	for i := range res.Releases {
		if inSlack(&res.Releases[i]) {
			return true
		}
	}
	return false
}

// slackOrigin says where a granted slack comes from: the thread's timer
// slack, or a poll/select/epoll timeout's share (select_estimate_accuracy:
// 0.1% of the timeout, 0.5% at a positive nice, at most 100 ms, at least
// the thread's timer slack). The thread's is read at its discovery
// (Subject.TimerSlackNs), so a larger range may also be a slack it set
// since.
func slackOrigin(s Subject, slack uint64) string {
	const either = "a poll/select/epoll timeout's share (0.1% of it, up to 100 ms), which a shorter timeout or a real-time policy removes"
	switch {
	case s.TimerSlackNs != 0 && slack == s.TimerSlackNs:
		return fmt.Sprintf("that is this %s thread's timer slack (/proc/TID/timerslack_ns)", s.Sched)
	case s.TimerSlackNs != 0 && slack > s.TimerSlackNs:
		return fmt.Sprintf("more than this thread's timer slack as read (%s): %s, or a timer slack it set since", us(s.TimerSlackNs), either)
	}
	return "the thread's timer slack (prctl(PR_SET_TIMERSLACK)), or " + either
}

// slackWords describes a release inside its granted range, for the
// verdicts that word releases one by one.
func slackWords(r *Release) string {
	return fmt.Sprintf("inside its timer's slack of %s (the kernel's choice: timer slack)", us(*r.SlackNs))
}

package analysis

import (
	"fmt"
	"strings"
)

// defaultIdleExitNs bounds an exit from idle when the caller read no bound
// (Subject.IdleExitNs 0): no idle state takes milliseconds to leave.
const defaultIdleExitNs = 1_000_000

// gapPart is time of a gap above the idle exit bound that a recorded cause
// accounts for.
type gapPart struct {
	what  string
	ns    uint64
	cause Cause
}

// gapCauses name what was seen on a CPU during a gap above its idle exit
// bound (cpu, in the phase of the idle time), in the order the verdict
// lists them. The hook for the other recorded causes: RT throttling (the
// rt-throttling branch of issue 38) belongs here, a func that returns the
// throttled time of cpu in the phase, before firmware.
var gapCauses = []func(res *Result, tl *timelines, cpu int, phase Phase) gapPart{stealPart}

// stealPart is the hypervisor steal recorded on cpu in the phase.
func stealPart(res *Result, _ *timelines, cpu int, phase Phase) gapPart {
	p := gapPart{what: "hypervisor steal", cause: CauseHypervisor}
	for _, it := range res.Breakdown {
		if it.Kind == KindHypervisor && it.CPU == cpu && it.Phase == phase {
			p.ns += it.Ns
		}
	}
	return p
}

// idleBound is the subject's idle exit bound and where it comes from.
func idleBound(s Subject) (uint64, string) {
	if s.IdleExitNs == 0 {
		return defaultIdleExitNs, "no idle state takes milliseconds to leave"
	}
	return s.IdleExitNs, s.IdleExitWhy
}

// idleGap is the idle time to judge against the bound, and the gap it lies
// in: for a release, its delay past the timer's hard expiry (the slack
// before it is the kernel's choice, grantedSlackVerdict); else the CPU's
// idle time with what else was seen on it meanwhile.
func idleGap(res *Result, tl *timelines, g *group, top *Item) (idle, gap uint64, parts []gapPart) {
	idle = g.ns
	for _, f := range gapCauses {
		if p := f(res, tl, top.CPU, top.Phase); p.ns > 0 {
			parts = append(parts, p)
		}
	}
	r := releaseAt(res, top)
	if top.Phase != PhaseRelease || r == nil {
		gap = idle
		for _, p := range parts {
			if p.cause == CauseHypervisor { // accounted apart from the idle time
				gap += p.ns
			}
		}
		return idle, gap, parts
	}
	gap = uint64(max(*r.IRQDelayNs, 0))
	if r.SlackNs != nil {
		gap -= min(gap, *r.SlackNs)
		idle -= min(idle, *r.SlackNs)
	}
	return idle, gap, parts
}

// beyondIdleVerdict explains (true) idle time above the machine's idle
// exit bound: never an exit from idle. It lists what was seen in the gap
// (steal, the gapCauses, whether SMIs can be counted) and says plainly
// that the rest is unexplained; a seen cause covering half the gap or more
// is the cause.
func beyondIdleVerdict(res *Result, tl *timelines, s Subject, g *group, top *Item) bool {
	bound, why := idleBound(s)
	idle, gap, parts := idleGap(res, tl, g, top)
	if idle <= bound {
		return false
	}
	what := fmt.Sprintf("CPU %d was idle and took %s to run the task after its wakeup", top.CPU, us(gap))
	if top.Phase == PhaseRelease {
		what = fmt.Sprintf("CPU %d was idle when the timer expired and its interrupt came %s past the timer's range", top.CPU, us(gap))
	}
	seen, largest := uint64(0), gapPart{}
	var words []string
	for _, p := range parts {
		seen += p.ns
		words = append(words, fmt.Sprintf("%s %s", p.what, us(p.ns)))
		if p.ns > largest.ns {
			largest = p
		}
	}
	if len(words) == 0 {
		words = append(words, "no steal or other cause recorded")
	}
	words = append(words, smiWords(s))
	rest := gap - min(gap, seen)
	res.Cause, res.Culprit = CauseUnexplained, "unexplained"
	if largest.ns*2 >= gap {
		res.Cause, res.Culprit = largest.cause, largest.what
	}
	res.Verdict = fmt.Sprintf("not an exit from idle: %s, above this machine's idle exit bound of %s (%s); seen in it: %s",
		what, us(bound), why, strings.Join(words, "; "))
	if rest > 0 {
		res.Verdict += fmt.Sprintf("; the remaining %s is unexplained: no recorded event accounts for it", us(rest))
	}
	return true
}

// smiWords says whether an SMI (firmware) stall could be counted here.
func smiWords(s Subject) string {
	if s.SMICounter {
		return "SMIs: count them with perf's msr/smi event (this machine has the counter)"
	}
	return "SMIs: this machine exposes no SMI counter (msr/smi), so firmware cannot be counted"
}

// idleAbove tells a release on an idle CPU whose delay past its timer's
// range is above the idle exit bound the window was judged against. A
// result read back from JSON has none (0): its releases keep the words its
// recorded verdict was written with.
func idleAbove(r *Release, idleExitNs uint64) bool {
	if r.IRQDelayNs == nil || idleExitNs == 0 {
		return false
	}
	past := uint64(max(*r.IRQDelayNs, 0))
	if r.SlackNs != nil {
		past -= min(past, *r.SlackNs)
	}
	return past > idleExitNs
}

package analysis

import (
	"encoding/json"
	"testing"
)

// TestVocabularyText pins the JSON text of every cause, CPU state,
// release place, phase and item kind (the
// recorded windows' golden files cover only those their windows reach): a
// renamed constant would change what machines read.
func TestVocabularyText(t *testing.T) {
	causes := map[Cause]string{CauseExecution: "execution", CauseInterference: "interference", CauseCPUHog: "cpu-hog",
		CauseBlocking: "blocking", CauseNonPreemptible: "non-preemptible", CausePriorityInversion: "priority-inversion",
		CauseInternalBlocking: "internal-blocking", CauseHardIRQ: "hardirq", CauseSoftIRQ: "softirq", CauseIRQOff: "irq-off",
		CauseExitFromIdle: "exit-from-idle", CauseMigration: "migration", CauseRelease: "release", CauseHypervisor: "hypervisor",
		CauseCPUUnavailable: "cpu-unavailable", CauseInconclusive: "inconclusive", CauseMonitor: "monitor", CauseThrottling: "rt-throttling",
		CauseOverrun: "overrun", CauseLongSleep: "long-sleep", CauseUnexplained: "unexplained", CauseIPI: "ipi"}
	if len(causes) != 22 {
		t.Fatalf("%d distinct causes, want 22", len(causes))
	}
	for c, want := range causes {
		b, err := json.Marshal(Result{Cause: c})
		var back Result
		if err != nil || json.Unmarshal(b, &back) != nil || back.Cause != c {
			t.Errorf("cause %q does not read back (%s)", c, b)
		}
		if got, _ := c.MarshalText(); string(got) != want || c.String() != want {
			t.Errorf("cause %q written %q, want %q", c, got, want)
		}
	}
	states := map[CPUState]string{CPUIdle: "idle", CPUHardIRQ: "hard IRQ", CPUSoftIRQ: "softirq",
		CPUTask: "task (interrupts off)", CPUSteal: "hypervisor (steal)", CPUUnknown: "unknown", CPUNoDelay: "none (no delay)"}
	if len(states) != 7 {
		t.Fatalf("%d distinct CPU states, want 7", len(states))
	}
	for s, want := range states {
		b, err := json.Marshal(Release{CPUState: s})
		var back Release
		if err != nil || json.Unmarshal(b, &back) != nil || back.CPUState != s {
			t.Errorf("CPU state %q does not read back (%s)", s, b)
		}
		if got, _ := s.MarshalText(); string(got) != want || s.String() != want {
			t.Errorf("CPU state %q written %q, want %q", s, got, want)
		}
	}
	for w, want := range map[Where]string{AtStart: "start", AtEnd: "end", InWindow: "window"} {
		if got, _ := w.MarshalText(); string(got) != want {
			t.Errorf("release place %q written %q, want %q", w, got, want)
		}
	}
	phases := map[Phase]string{PhaseRelease: "release", PhaseRunnable: "runnable", PhaseRunning: "running", PhaseBlocked: "blocked"}
	kinds := map[Kind]string{KindExecution: "execution", KindInterference: "interference", KindBlocking: "blocking",
		KindIdle: "idle", KindHardIRQ: "hardirq", KindTimer: "timer", KindOwnTimer: "own-timer", KindSoftIRQ: "softirq",
		KindIRQOff: "irq-off", KindSleep: "sleep", KindPeriodSleep: "period-sleep", KindUnknown: "unknown", KindHypervisor: "hypervisor",
		KindIPI: "ipi", KindThrottled: "throttled"}
	if len(phases) != 4 || len(kinds) != 15 {
		t.Fatalf("%d phases, %d kinds: want 4 and 15 distinct", len(phases), len(kinds))
	}
	for p, want := range phases {
		if got, _ := p.MarshalText(); string(got) != want {
			t.Errorf("phase %q written %q, want %q", p, got, want)
		}
	}
	for k, want := range kinds {
		b, err := json.Marshal(Item{Kind: k})
		var back Item
		if err != nil || json.Unmarshal(b, &back) != nil || back.Kind != k {
			t.Errorf("kind %q does not read back (%s)", k, b)
		}
		if got, _ := k.MarshalText(); string(got) != want {
			t.Errorf("kind %q written %q, want %q", k, got, want)
		}
	}
	for _, c := range []Cause{CauseHypervisor, CauseCPUUnavailable} {
		if !c.Platform() {
			t.Errorf("%s is not the platform's", c)
		}
	}
	if CauseIRQOff.Platform() {
		t.Error("irq-off is the platform's")
	}
}

package scenario

import (
	"strings"
	"testing"
	"time"
)

func TestCatalogue(t *testing.T) {
	want := []string{"healthy-loop", "misconfigured-priority", "hidden-blocking", "event-driven-blocking",
		"priority-inversion", "rt-hog", "irq-noise", "preempt-off", "overrunning-loop",
		"healthy-deadline", "deadline-overrun", // builtin_deadline.go's init runs before builtin_io.go's
		"page-faults", "pipe-write", "ipi-storm", "busy-poll-noise", "remote-work", "rt-throttling"}
	if got := strings.Join(Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("scenarios %s, want %s", got, strings.Join(want, ","))
	}
	for _, s := range All() {
		seen := map[string]bool{}
		for _, n := range s.Threads() {
			if len(n) > 15 || seen[n] {
				t.Errorf("%s: thread name %q is too long or repeated", s.Name, n)
			}
			seen[n] = true
		}
		if s.Summary == "" || len(s.Description) < 100 || len(s.Threads()) == 0 {
			t.Errorf("%s lacks a summary, a description or threads", s.Name)
		}
		for _, p := range s.Params {
			if p.Kind != Bool && (p.Default < p.Min || p.Default > p.Max) {
				t.Errorf("%s --%s: default %d outside its bounds", s.Name, p.Name, p.Default)
			}
		}
		if _, _, err := s.Resolve(Config{CPU: -1, Duration: time.Second}); err != nil {
			t.Errorf("%s: defaults refused: %v", s.Name, err)
		}
	}
}

// Each bad input is refused with one sentence that names the culprit.
func TestBadInput(t *testing.T) {
	if _, err := Get("no-such"); err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Errorf("unknown scenario: %v", err)
	}
	cases := []struct {
		scenario string
		cfg      Config
		want     string
	}{
		{"healthy-loop", Config{CPU: 4096}, "CPU 4096 does not exist"},
		{"healthy-loop", Config{CPU: -1, Values: Values{"period": 10 * us}}, "--period 10.0 us is outside"},
		{"healthy-loop", Config{CPU: -1, Values: Values{"prio": 100}}, "--prio 100 is outside"},
		{"healthy-loop", Config{CPU: -1, Values: Values{"work": 3 * ms}}, "must be shorter than --period"},
		{"healthy-loop", Config{CPU: -1, Values: Values{"spin": ms}}, "no parameter --spin"},
		{"healthy-loop", Config{CPU: -1, Duration: -time.Second}, "--duration"},
		{"irq-noise", Config{CPU: -1, Force: true, Values: Values{"spin": 21 * ms}}, "--spin 21000.0 us is outside"},
		{"preempt-off", Config{CPU: -1, Values: Values{"spin": 4 * ms}}, "add --force"},
		{"preempt-off", Config{CPU: -1, Values: Values{"every": 50 * ms}}, "add --force"},
		{"irq-noise", Config{CPU: -1, Force: true, Values: Values{"spin": 10 * ms, "every": 15 * ms}}, "duty cycle"},
		{"irq-noise", Config{CPU: -1, Force: true, Values: Values{"every": 10500 * us}}, "multiple of --victim-period"},
		{"rt-hog", Config{CPU: -1, Values: Values{"burst": 5 * ms}}, "add --force"},
		// The victim is a real-time load too: harsher than its defaults
		// needs --force, and never above half its CPU.
		{"rt-hog", Config{CPU: -1, Values: Values{"victim-prio": 99}}, "--victim-prio 99 is above the default 80"},
		{"irq-noise", Config{CPU: -1, Values: Values{"victim-period": 500 * us}}, "add --force"},
		{"preempt-off", Config{CPU: -1, Values: Values{"victim-work": 200 * us}}, "add --force"},
		{"rt-hog", Config{CPU: -1, Force: true, Values: Values{"victim-period": 100 * us, "victim-work": 99 * us, "every": 20 * ms}}, "99% duty cycle"},
		{"priority-inversion", Config{CPU: -1, Values: Values{"m-prio": 95}}, "ordered H > M > L"},
		{"event-driven-blocking", Config{CPU: -1, Values: Values{"min-gap": 9 * ms}}, "--min-gap"},
		{"event-driven-blocking", Config{CPU: -1, Values: Values{"hold": 9 * ms}}, "--hold"},
		{"overrunning-loop", Config{CPU: -1, Values: Values{"work": 1 * ms}}, "must be longer than --period"},
		{"overrunning-loop", Config{CPU: -1, Values: Values{"every": 4}}, "add --force"},
		{"overrunning-loop", Config{CPU: -1, Force: true, Values: Values{"overruns": 8, "every": 10}}, "duty cycle"},
		{"overrunning-loop", Config{CPU: -1, Force: true, Values: Values{"overruns": 16}}, "--overruns 16 must be below --every 16"},
	}
	for _, c := range cases {
		s, _ := Get(c.scenario)
		_, _, err := s.Resolve(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s %+v: error %v, want one sentence with %q", c.scenario, c.cfg, err, c.want)
		}
	}
	// Above the defaults with --force, within the hard limits: accepted.
	s, _ := Get("irq-noise")
	if _, _, err := s.Resolve(Config{CPU: -1, Force: true, Values: Values{"spin": 5 * ms, "every": 20 * ms}}); err != nil {
		t.Errorf("forced injection within the limits refused: %v", err)
	}
}

func TestFlags(t *testing.T) {
	s, _ := Get("priority-inversion")
	var cfg Config
	fs, collect := s.Flags(&cfg)
	if err := fs.Parse([]string{"--pi", "--h-period", "6ms", "--cpu", "0", "--duration", "2s"}); err != nil {
		t.Fatal(err)
	}
	collect()
	if cfg.CPU != 0 || cfg.Duration != 2*time.Second || cfg.Values["pi"] != 1 || cfg.Values["h-period"] != 6*ms || len(cfg.Values) != 2 {
		t.Errorf("parsed %+v", cfg)
	}
	fs, _ = s.Flags(&cfg)
	if err := fs.Parse([]string{"--h-period", "6000"}); err == nil || !strings.Contains(err.Error(), "no unit") {
		t.Errorf("a time without unit: %v", err)
	}
	// The same time syntax as --slo (units.ParseNs), overflows named.
	fs, collect = s.Flags(&cfg)
	if err := fs.Parse([]string{"--h-period", "1e4us"}); err != nil {
		t.Errorf("1e4us: %v", err)
	} else if collect(); cfg.Values["h-period"] != 10*ms {
		t.Errorf("1e4us parsed as %d ns", cfg.Values["h-period"])
	}
	fs, _ = s.Flags(&cfg)
	if err := fs.Parse([]string{"--h-period", "1e30s"}); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("an overflow: %v", err)
	}
	fs, _ = s.Flags(&cfg)
	if fs.Lookup("force") != nil {
		t.Error("priority-inversion has nothing to force but offers --force")
	}
	irq, _ := Get("irq-noise")
	if fs, _ := irq.Flags(&cfg); fs.Lookup("force") == nil {
		t.Error("irq-noise lacks --force")
	}
}

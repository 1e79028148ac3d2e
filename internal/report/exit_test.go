package report

import "testing"

func TestExitStatus(t *testing.T) {
	n := func(v uint64) *uint64 { return &v }
	i := func(v int) *int { return &v }
	violated := []*Task{{Metrics: map[string]*Metric{"latency": {Violations: n(3)}, "cycle": {Violations: nil}}}}
	healthy := []*Task{{Metrics: map[string]*Metric{"latency": {Violations: n(0)}}}}
	cases := []struct {
		name string
		r    Report
		want int
	}{
		{"no SLO, no command", Report{Tasks: []*Task{{Metrics: map[string]*Metric{"latency": {}}}}}, 0},
		{"SLO kept", Report{Tasks: healthy}, 0},
		{"SLO violated", Report{Tasks: violated}, 2},
		{"command succeeded, SLO violated", Report{Tasks: violated, Command: &Command{ExitStatus: i(0)}}, 2},
		{"command failed: its status wins", Report{Tasks: violated, Command: &Command{ExitStatus: i(3)}}, 3},
		{"command killed by SIGSEGV", Report{Tasks: healthy, Command: &Command{Signal: "SIGSEGV", SignalNo: 11}}, 139},
		{"command stopped by rtscope", Report{Tasks: healthy, Command: &Command{Signal: "SIGTERM", SignalNo: 15, StoppedByRtscope: true}}, 0},
		{"stopped by rtscope, SLO violated", Report{Tasks: violated, Command: &Command{ExitStatus: i(143), StoppedByRtscope: true}}, 2},
	}
	for _, c := range cases {
		if got := ExitStatus(&c.r); got != c.want {
			t.Errorf("%s: exit status %d, want %d", c.name, got, c.want)
		}
	}
}

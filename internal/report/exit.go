package report

// Exit statuses of rtscope watch, for CI gates. The first that applies
// wins: an error of rtscope's own (1); the launched command's own failure
// (its status, 128+N for signal N, as time and perf stat pass it on); an
// SLO violated, or with --fail-on a task judged that bad or worse (2);
// else 0.
const (
	ExitHealthy     = 0
	ExitError       = 1
	ExitSLOViolated = 2
)

// ExitStatus is the exit status of a watch that produced r (no error).
func ExitStatus(r *Report) int {
	if c := r.Command; c != nil && !c.StoppedByRtscope {
		switch {
		case c.ExitStatus != nil && *c.ExitStatus != 0:
			return *c.ExitStatus
		case c.ExitStatus == nil && c.SignalNo > 0:
			return 128 + c.SignalNo
		}
	}
	if r.Violations() > 0 {
		return ExitSLOViolated
	}
	if r.FailOn != "" {
		for _, t := range r.Tasks {
			if t.Health.Rank() >= r.FailOn.Rank() {
				return ExitSLOViolated
			}
		}
	}
	return ExitHealthy
}

// Worst is the worst judgement of r's tasks (HealthOK without tasks).
func (r *Report) Worst() Health {
	w := HealthOK
	for _, t := range r.Tasks {
		if t.Health.Rank() > w.Rank() {
			w = t.Health
		}
	}
	return w
}

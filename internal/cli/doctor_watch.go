package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/doctor"
	"github.com/rtscope/rtscope/internal/isolation"
)

// doctor --watch DUR [-c CPUS]: after the checks, the isolated CPUs
// watched with rtscope isolation's collector, its report after them.

// errNoIsolated is the sentence of doctor --watch without -c on a machine
// with no isolated or nohz_full CPU.
var errNoIsolated = errors.New("no CPU is isolated (isolcpus=) or nohz_full here, so none was watched; name CPUs to watch with -c, as in --watch 10s -c 1")

// isolationCPUs are the CPUs doctor --watch watches: -c's, else the
// isolated and nohz_full ones; errNoIsolated when there are none (not a
// failure: a sentence in the report). rtscope's threads are moved off
// them, before the checks: a bad -c fails before any BPF is loaded.
func (f *doctorFlags) isolationCPUs() ([]int, error) {
	var cpus []int
	var err error
	if f.cpus == "" {
		if cpus, err = isolation.DefaultCPUs(); err != nil {
			return nil, errNoIsolated
		}
	} else if cpus, err = cpuset.ParseList(f.cpus); err != nil {
		return nil, fmt.Errorf("-c: %w", err)
	}
	if err := isolation.CheckCPUs(cpus); err != nil {
		return nil, fmt.Errorf("-c: %w", err)
	}
	if err := pinOff(cpus); err != nil {
		return nil, fmt.Errorf("-c: %w", err)
	}
	return cpus, nil
}

// checkWatch checks --watch and -c together: -c needs --watch.
func (f *doctorFlags) checkWatch() error {
	if f.watch < 0 || f.watch > time.Hour {
		return fmt.Errorf("--watch %v: want 0 to 1h", f.watch)
	}
	if f.cpus != "" && f.watch == 0 {
		return errors.New("-c needs --watch DURATION: the CPUs are watched for that long")
	}
	return nil
}

// watchIsolation watches cpus for d with the isolation collector.
func watchIsolation(ctx context.Context, cpus []int, d time.Duration) (*doctor.Isolation, error) {
	snap, err := isolation.Collect(ctx, isolation.Options{CPUs: cpus, Duration: d})
	if err != nil {
		return nil, err
	}
	return &doctor.Isolation{CPUs: cpus, Report: isolation.Analyze(snap)}, nil
}

// writeIsolation prints doctor --watch's isolation section after the checks.
func writeIsolation(w io.Writer, iso *doctor.Isolation) {
	if iso == nil {
		return
	}
	if iso.Note != "" {
		fmt.Fprintf(w, "\nisolation: %s\n", iso.Note)
		return
	}
	r, _ := iso.Report.(*isolation.Result)
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nisolation: CPU %s watched for %.1f s (rtscope isolation, docs/isolation.md)\n",
		strings.TrimSpace(cpuset.FormatList(iso.CPUs)), float64(r.DurationNs)/1e9)
	isolation.Print(w, r)
}

// watchAll is doctor --watch: cpus (f.isolationCPUs; none: note says
// why) and, with targets, their PI mutex use, watched at the same time
// for f.watch; what it saw goes into rep.
func (f *doctorFlags) watchAll(t doctor.Targets, cpus []int, note error, rep *doctor.Report) error {
	if note != nil {
		rep.Isolation = &doctor.Isolation{Note: note.Error()}
	}
	ctx, stop := stopSignals()
	defer stop()
	var iso *doctor.Isolation
	var isoErr error
	isoDone := make(chan struct{})
	go func() {
		defer close(isoDone)
		if cpus != nil {
			iso, isoErr = watchIsolation(ctx, cpus, f.watch)
		}
	}()
	var piErr error
	if !f.targets.empty() {
		var pi []doctor.Check
		if pi, piErr = watchPI(t, f.watch); piErr == nil {
			rep.Add(pi...)
		}
	}
	<-isoDone
	if err := errors.Join(piErr, isoErr); err != nil {
		return fmt.Errorf("--watch: %w", err)
	}
	if iso != nil {
		rep.Isolation = iso
	}
	return nil
}

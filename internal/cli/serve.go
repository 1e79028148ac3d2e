package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/analysis"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/serve"
	"github.com/rtscope/rtscope/internal/slo"
)

func init() {
	Register(&Command{Name: "serve", Summary: "always-on agent: watch targets until stopped, export to Prometheus (/metrics)", Run: runServe})
}

const serveUsage = `Usage: rtscope serve [flags]

Watch targets until stopped (SIGINT, SIGTERM) and export what the engine
measures on /metrics for Prometheus: per-target histograms of every metric,
SLO violations and their causes, what was lost, the agent's own cost. The
agent survives the exit of every target; comm targets pick up new tasks
whenever they appear. Metric names: docs/metrics.md.

Targets and SLOs come from flags and from --config (YAML), both combined:
  listen: 127.0.0.1:9717
  targets:
    - comm: control
    - pid: 1234
  slo:
    - latency=200us
    - 1234:cycle=1ms

Flags:
`

func runServe(args []string) int {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SortFlags = false
	config := fs.String("config", "", "YAML configuration file (targets, slo, listen)")
	listen := fs.String("listen", "", "address of /metrics (default "+serve.DefaultListen+", localhost only)")
	tids := fs.StringSliceP("tid", "p", nil, "thread id to watch")
	pids := fs.StringSlice("pid", nil, "process id: watch all its threads")
	comms := fs.StringSlice("comm", nil, "task name to watch (max 15 characters), including tasks that appear later")
	slos := fs.StringArray("slo", nil, "SLO bound [ID:]METRIC=TIME, e.g. latency=50us (repeatable)")
	tick := fs.Duration("tick", time.Second, "how often live tasks' statistics are read for /metrics")
	noTrace := fs.Bool("no-trace", false, "no flight recorder: violations are counted but not explained (lowest overhead)")
	traceEvents := fs.Uint32("trace-events", engine.DefaultFlightPerCPU, "flight recorder depth per CPU, a power of two (48 bytes an event)")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, serveUsage, fs.FlagUsages(), "\nMetrics: ", strings.Join(metric.Names(), ", "), "\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return Fail("serve", err)
	}
	if fs.NArg() > 0 {
		return Fail("serve", fmt.Errorf("unexpected argument %q (serve launches no command: watch it by --comm)", fs.Arg(0)))
	}
	var o serve.Options
	var err error
	if o.Watch.Targets.TIDs, err = parseIDs("tid", *tids); err != nil {
		return Fail("serve", err)
	}
	if o.Watch.Targets.PIDs, err = parseIDs("pid", *pids); err != nil {
		return Fail("serve", err)
	}
	o.Watch.Targets.Comms = *comms
	sloSpecs := *slos
	if *config != "" {
		c, err := serve.LoadConfig(*config)
		if err != nil {
			return Fail("serve", err)
		}
		sloSpecs = c.Merge(&o.Watch.Targets, sloSpecs)
		o.Listen = c.Listen
	}
	if *listen != "" {
		o.Listen = *listen // the flag wins over the file
	}
	if *tick <= 0 {
		return Fail("serve", errors.New("--tick must be positive"))
	}
	if err := engine.CheckFlightPerCPU(*traceEvents); err != nil {
		return Fail("serve", fmt.Errorf("--trace-events %w", err))
	}
	var bounds []slo.Bound
	for _, s := range sloSpecs {
		b, err := slo.Parse(s)
		if err != nil {
			return Fail("serve", err)
		}
		bounds = append(bounds, b)
	}
	if o.Watch.Targets.Empty() {
		return Fail("serve", errors.New("nothing to watch: give --comm, --pid or --tid, or targets in --config"))
	}
	o.Watch.SLO = slo.Build(bounds)
	o.Watch.NoTrace, o.Watch.TraceEvents = *noTrace, *traceEvents
	o.Watch.AutoHousekeeping = true
	o.Watch.Analyze = analyzer()
	o.Watch.Explain = analysis.ForViolation
	o.Tick = *tick
	o.Log = os.Stderr
	o.Ready = func(addr string) {
		fmt.Fprintf(os.Stderr, "rtscope serve: attached and tracking; metrics on http://%s/metrics\n", addr)
	}
	// SIGINT and SIGTERM stop the agent; SIGHUP (a closed terminal, or a
	// reload request) does not: the agent outlives its terminal.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	signal.Ignore(syscall.SIGHUP)
	if err := serve.Run(ctx, o); err != nil {
		return Fail("serve", err)
	}
	return 0
}

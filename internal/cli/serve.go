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

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/explain"
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
  archive: /var/lib/rtscope/windows   # archive_max_mb: 64
  targets:
    - comm: control
    - pid: 1234
    - cgroup: /system.slice/control.service   # or control.service
  slo:
    - latency=200us
    - 1234:cycle=1ms

While it runs, rtscope ctl changes targets and SLOs through --socket, and
SIGHUP (or rtscope ctl reload) rereads --config. --archive keeps new worst
cases and SLO-violation windows on disk with their verdicts (rtscope ctl
windows): docs/serve.md.

Flags:
`

func runServe(args []string) int {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SortFlags = false
	config := fs.String("config", "", "YAML configuration file (targets, slo, listen)")
	listen := fs.String("listen", "", "address of /metrics (default "+serve.DefaultListen+", localhost only)")
	archive := fs.String("archive", "", "directory of archived worst-case and SLO-violation windows (empty: none)")
	archiveMB := fs.Int64("archive-max-mb", 0, "size cap of --archive in MiB; the oldest windows are removed (default 64)")
	violGap := fs.Duration("archive-violation-gap", serve.DefaultViolationGap, "least time between two archived violation windows of a target and metric")
	socket := fs.String("socket", serve.DefaultSocket, "unix socket of the control API (rtscope ctl), root only; empty: no API")
	tids := fs.StringSliceP("tid", "p", nil, "thread id to watch")
	pids := fs.StringSlice("pid", nil, "process id: watch all its threads")
	comms := fs.StringSlice("comm", nil, "task name to watch (max 15 characters), including tasks that appear later")
	cgroups := fs.StringArray("cgroup", nil, "cgroup v2 path or systemd unit name: every task in it or below, now and when it enters later (repeatable)")
	slos := fs.StringArray("slo", nil, "SLO bound [ID:]METRIC=TIME, e.g. latency=50us (repeatable)")
	tick := fs.Duration("tick", time.Second, "how often live tasks' statistics are read for /metrics")
	noTrace := fs.Bool("no-trace", false, "no flight recorder: violations are counted but not explained (lowest overhead)")
	traceEvents := fs.Uint32("trace-events", engine.DefaultFlightPerCPU, "flight recorder depth per CPU, a power of two (48 bytes an event)")
	btfFile := fs.String("btf", "", "the running kernel's vmlinux BTF as a FILE (raw, BTFHub style), for the BTF engine where /sys/kernel/btf/vmlinux does not show it; the kernel must have BTF of its own")
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
	var flagCfg serve.Config
	tidList, err := parseIDs("tid", *tids)
	if err != nil {
		return Fail("serve", err)
	}
	pidList, err := parseIDs("pid", *pids)
	if err != nil {
		return Fail("serve", err)
	}
	for _, t := range tidList {
		flagCfg.Targets = append(flagCfg.Targets, serve.TargetConfig{TID: t})
	}
	for _, p := range pidList {
		flagCfg.Targets = append(flagCfg.Targets, serve.TargetConfig{PID: p})
	}
	for _, c := range *comms {
		t := serve.TargetConfig{Comm: c}
		if err := t.Check(); err != nil {
			return Fail("serve", fmt.Errorf("--comm %s: %w", c, err))
		}
		flagCfg.Targets = append(flagCfg.Targets, t)
	}
	for _, c := range *cgroups {
		flagCfg.Targets = append(flagCfg.Targets, serve.TargetConfig{Cgroup: c})
	}
	for _, s := range *slos {
		if _, err := slo.Parse(s); err != nil {
			return Fail("serve", fmt.Errorf("--slo: %w", err))
		}
	}
	flagCfg.SLO = *slos
	var file *serve.Config
	if *config != "" {
		if file, err = serve.LoadConfig(*config); err != nil {
			return Fail("serve", err)
		}
		o.Listen = file.Listen
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
	archDir, archBytes := *archive, int64(serve.DefaultArchiveBytes)
	if file != nil {
		if archDir == "" {
			archDir = file.Archive
		}
		if file.ArchMB > 0 {
			archBytes = file.ArchMB << 20
		}
	}
	if fs.Changed("archive-max-mb") {
		if *archiveMB <= 0 {
			return Fail("serve", errors.New("--archive-max-mb must be above zero"))
		}
		archBytes = *archiveMB << 20
	}
	if *violGap < 0 {
		return Fail("serve", errors.New("--archive-violation-gap must not be negative"))
	}
	if archDir != "" {
		if o.Archive, err = serve.OpenArchive(archDir, archBytes, *violGap); err != nil {
			return Fail("serve", err)
		}
	}
	o.Control = serve.NewControl(flagCfg, *config, file)
	o.Socket = *socket
	o.Watch.Targets = o.Control.Spec()
	if o.Watch.Targets.Empty() {
		return Fail("serve", errors.New("nothing to watch: give --comm, --pid or --tid, or targets in --config"))
	}
	o.Watch.SLO = o.Control.SLO()
	o.Watch.NoTrace, o.Watch.TraceEvents, o.Watch.BTFFile = *noTrace, *traceEvents, *btfFile
	o.Watch.AutoHousekeeping = true
	// The agent explains a worst window only when it archives it (once per
	// window), and reports no per-task hygiene: explain.ForWatch's cache,
	// a decoded trace per task and metric never forgotten, would grow with
	// task churn.
	o.Watch.Analyze = explain.ForViolation
	o.Watch.Explain = explain.ForViolation
	o.Tick = *tick
	o.Log = os.Stderr
	o.Ready = func(addr string) {
		fmt.Fprintf(os.Stderr, "rtscope serve: attached and tracking; metrics on http://%s/metrics\n", addr)
	}
	// SIGINT and SIGTERM stop the agent; SIGHUP reloads the configuration
	// (targets and SLOs of the flags and --config, docs/serve.md).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				if err := o.Control.Reload(); err != nil {
					fmt.Fprintf(os.Stderr, "rtscope serve: SIGHUP: reload failed, nothing changed: %v\n", err)
				} else {
					fmt.Fprintln(os.Stderr, "rtscope serve: SIGHUP: configuration reloaded")
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	if err := serve.Run(ctx, o); err != nil {
		return Fail("serve", err)
	}
	return 0
}

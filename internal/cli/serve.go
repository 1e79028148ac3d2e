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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/explain"
	"github.com/rtscope/rtscope/internal/isolation"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/serve"
	"github.com/rtscope/rtscope/internal/slo"
)

func init() { RegisterCmd(newServeCmd) }

const serveLong = `Watch targets until stopped (SIGINT, SIGTERM) and export what the engine
measures on /metrics for Prometheus: per-target histograms of every metric,
SLO violations and their causes, what was lost, the agent's own cost. The
agent survives the exit of every target; comm targets pick up new tasks
whenever they appear. Metric names: docs/metrics.md.

Targets and SLOs come from flags and from --config (YAML, rtscope-serve.yaml(5)),
both combined:
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

--intrusions CPUS (or intrusions: in --config) also counts what intrudes on
those CPUs, as rtscope isolation does: rtscope_cpu_intrusions_total and
rtscope_cpu_intrusion_seconds_total per CPU and cause (ipi, irq, softirq,
work, task). --intrusions isolated takes the isolated and nohz_full
CPUs. Senders and task names are left out of the labels (they are
unbounded): rtscope isolation names them. Tasks of the targets and of
--intrusions-allow are the workload, not counted as task intrusions. The
isolation tracepoints are attached only with --intrusions: docs/isolation.md.`

// newServeCmd builds the serve command over serveFlags.
func newServeCmd() *cobra.Command {
	var f serveFlags
	fs := f.flagSet()
	c := &cobra.Command{
		Use:     "serve [flags]",
		Short:   "always-on agent: watch targets until stopped, export to Prometheus (/metrics)",
		Long:    serveLong,
		Example: "  rtscope serve --comm control --slo latency=200us\n  rtscope serve --config /etc/rtscope/serve.yaml --archive /var/lib/rtscope/windows",
		Annotations: map[string]string{annSeeAlso: "rtscope-serve.yaml(5) rtscope-ctl(1)", annMore: "Metrics: " + strings.Join(metric.Names(), ", "),
			annExit: "0 when stopped by SIGINT or SIGTERM; 1 on an error (bad flags or configuration, no BPF, the address or socket taken)."},
		RunE: status(func(_ *cobra.Command, args []string) int { return f.run(fs, args) }),
	}
	return withFlags(c, fs)
}

// run runs the agent with its flags parsed; args are those left.
func (f *serveFlags) run(fs *pflag.FlagSet, args []string) int {
	if len(args) > 0 {
		return Fail("serve", fmt.Errorf("unexpected argument %q (serve launches no command: watch it by --comm)", args[0]))
	}
	// watch's sentence (session.Check) for a user without root or
	// CAP_BPF and CAP_PERFMON, before the socket's bind or the archive's
	// directory fails on "permission denied".
	if err := engine.Probe(); err != nil {
		return Fail("serve", err)
	}
	o, err := f.options(fs)
	if err != nil {
		return Fail("serve", err)
	}
	o.Log = os.Stderr
	o.Ready = func(addr string) {
		if o.Watch.Targets.Empty() {
			fmt.Fprintf(os.Stderr, "rtscope serve: attached, no target yet (rtscope ctl add, or targets in --config and SIGHUP); metrics on http://%s/metrics\n", addr)
			return
		}
		fmt.Fprintf(os.Stderr, "rtscope serve: attached and tracking; metrics on http://%s/metrics\n", addr)
	}
	// SIGINT and SIGTERM stop the agent; SIGHUP reloads the configuration
	// (targets and SLOs of the flags and --config, docs/serve.md).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopReload := reloadOnHangup(ctx, o.Control)
	defer stopReload()
	if err := serve.Run(ctx, o); err != nil {
		return Fail("serve", err)
	}
	return 0
}

// serveFlags are serve's command line, before options checks them into
// serve.Options.
type serveFlags struct {
	config, listen, archive, socket string
	archiveMB                       int64
	violGap, tick                   time.Duration
	targets                         targetFlags
	slos                            []string
	engine                          engineFlags
	intrusions                      string   // --intrusions: CPUs, or "isolated"
	intrusionsAllow                 []string // --intrusions-allow
}

// flagSet defines serve's flags into f, one line a flag, in the order of
// its help.
func (f *serveFlags) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&f.config, "config", "", "YAML configuration file (targets, slo, listen)")
	fs.StringVar(&f.listen, "listen", "", "address of /metrics (default "+serve.DefaultListen+", localhost only)")
	fs.StringVar(&f.archive, "archive", "", "directory of archived worst-case and SLO-violation windows (empty: none)")
	fs.Int64Var(&f.archiveMB, "archive-max-mb", 0, "size cap of --archive in MiB; the oldest windows are removed (default 64)")
	fs.DurationVar(&f.violGap, "archive-violation-gap", serve.DefaultViolationGap, "least time between two archived violation windows of a target and metric")
	fs.StringVar(&f.socket, "socket", serve.DefaultSocket, "unix socket of the control API (rtscope ctl), root only; empty: no API")
	f.targets.add(fs, "watch", ", including tasks that appear later")
	f.targets.addCgroup(fs, " or below")
	addSLO(fs, &f.slos, "latency=50us")
	fs.DurationVar(&f.tick, "tick", time.Second, "how often live tasks' statistics are read for /metrics")
	f.engine.addNoTrace(fs, "no flight recorder: violations are counted but not explained (lowest overhead)")
	f.engine.addTraceEvents(fs)
	f.engine.addBTF(fs)
	f.engine.addIPI(fs)
	fs.StringVar(&f.intrusions, "intrusions", "", "CPUS: count what intrudes on these CPUs (1,3-5, or \""+intrusionsIsolated+
		"\": the isolated and nohz_full ones) per CPU and cause, as rtscope isolation does; attaches its tracepoints (docs/isolation.md)")
	fs.StringSliceVar(&f.intrusionsAllow, "intrusions-allow", nil, "COMM[,COMM...]: tasks that belong on the --intrusions CPUs besides the targets' (not counted as task intrusions)")
	return fs
}

// intrusionsIsolated is --intrusions' value for the isolated and nohz_full CPUs.
const intrusionsIsolated = "isolated"

// intrusionOptions checks --intrusions and --intrusions-allow, or the
// configuration file's intrusions and intrusions_allow (the flags win):
// nil when neither asks for intrusions.
func (f *serveFlags) intrusionOptions(file *serve.Config) (*serve.IntrusionOptions, error) {
	spec, allow := f.intrusions, f.intrusionsAllow
	if file != nil {
		if spec == "" {
			spec = file.Intrusions
		}
		if allow == nil {
			allow = file.IntrusionsAllow
		}
	}
	if spec == "" {
		if len(allow) > 0 {
			return nil, errors.New("--intrusions-allow needs --intrusions")
		}
		return nil, nil
	}
	var cpus []int
	var err error
	if spec == intrusionsIsolated {
		cpus, err = isolation.DefaultCPUs()
	} else {
		cpus, err = cpuset.ParseList(spec)
	}
	if err != nil {
		return nil, fmt.Errorf("--intrusions %s: %w", spec, err)
	}
	if err := isolation.CheckCPUs(cpus); err != nil {
		return nil, fmt.Errorf("--intrusions %s: %w", spec, err)
	}
	return &serve.IntrusionOptions{CPUs: cpus, Allow: allow}, nil
}

// options checks the command line and --config into the agent's options:
// the control of its targets and SLOs, /metrics, the archive, and the
// watch session it runs.
func (f *serveFlags) options(fs *pflag.FlagSet) (o serve.Options, err error) {
	flagCfg, err := f.targetConfig()
	if err != nil {
		return o, err
	}
	var file *serve.Config
	if f.config != "" {
		if file, err = serve.LoadConfig(f.config); err != nil {
			return o, err
		}
		o.Listen = file.Listen
	}
	if f.listen != "" {
		o.Listen = f.listen // the flag wins over the file
	}
	if f.tick <= 0 {
		return o, errors.New("--tick must be positive")
	}
	if err := f.engine.check(); err != nil {
		return o, err
	}
	if o.Intrusions, err = f.intrusionOptions(file); err != nil {
		return o, err
	}
	if o.Archive, err = f.openArchive(fs, file); err != nil {
		return o, err
	}
	o.Control = serve.NewControl(flagCfg, f.config, file)
	o.Socket = f.socket
	// With no target the agent starts idle (a package's service enabled
	// at boot): targets come later through ctl or a reloaded --config.
	o.Watch.Targets = o.Control.Spec()
	o.Watch.SLO = o.Control.SLO()
	f.engine.options(&o.Watch)
	o.Watch.AutoHousekeeping = true
	// The agent explains a worst window only when it archives it (once per
	// window), and reports no per-task hygiene: explain.ForWatch's cache,
	// a decoded trace per task and metric never forgotten, would grow with
	// task churn.
	o.Watch.Analyze = explain.ForViolation
	o.Watch.Explain = explain.ForViolation
	o.Tick = f.tick
	return o, nil
}

// targetConfig checks the targets and SLOs of the flags into the
// configuration they add to --config's.
func (f *serveFlags) targetConfig() (c serve.Config, err error) {
	tids, pids, err := f.targets.ids()
	if err != nil {
		return c, err
	}
	for _, t := range tids {
		c.Targets = append(c.Targets, serve.TargetConfig{TID: t})
	}
	for _, p := range pids {
		c.Targets = append(c.Targets, serve.TargetConfig{PID: p})
	}
	for _, n := range f.targets.comms {
		t := serve.TargetConfig{Comm: n}
		if err := t.Check(); err != nil {
			return c, fmt.Errorf("--comm %s: %w", n, err)
		}
		c.Targets = append(c.Targets, t)
	}
	for _, g := range f.targets.cgroups {
		c.Targets = append(c.Targets, serve.TargetConfig{Cgroup: g})
	}
	for _, s := range f.slos {
		if _, err := slo.Parse(s); err != nil {
			return c, fmt.Errorf("--slo: %w", err)
		}
	}
	c.SLO = f.slos
	return c, nil
}

// openArchive opens the archive of windows: its directory and size cap
// from the flags, else from --config (file, nil for none); nil for none.
func (f *serveFlags) openArchive(fs *pflag.FlagSet, file *serve.Config) (*serve.Archive, error) {
	dir, bytes := f.archive, int64(serve.DefaultArchiveBytes)
	if file != nil {
		if dir == "" {
			dir = file.Archive
		}
		if file.ArchMB > 0 {
			bytes = file.ArchMB << 20
		}
	}
	if fs.Changed("archive-max-mb") {
		if f.archiveMB <= 0 {
			return nil, errors.New("--archive-max-mb must be above zero")
		}
		bytes = f.archiveMB << 20
	}
	if f.violGap < 0 {
		return nil, errors.New("--archive-violation-gap must not be negative")
	}
	if dir == "" {
		return nil, nil
	}
	return serve.OpenArchive(dir, bytes, f.violGap)
}

// reloadOnHangup rereads the configuration on each SIGHUP until ctx ends;
// the function it returns stops listening for SIGHUP.
func reloadOnHangup(ctx context.Context, c *serve.Control) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-hup:
				if err := c.Reload(); err != nil {
					fmt.Fprintf(os.Stderr, "rtscope serve: SIGHUP: reload failed, nothing changed: %v\n", err)
				} else {
					fmt.Fprintln(os.Stderr, "rtscope serve: SIGHUP: configuration reloaded")
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { signal.Stop(hup) }
}

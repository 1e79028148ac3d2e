// Package serve is the always-on agent (rtscope serve): the watch session
// on the same engine and analysis, run until stopped, its measurements
// exported to Prometheus (/metrics) as cumulative per-target histograms and
// counters.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/watch"
)

// DefaultListen is the /metrics address: localhost only, as a node agent
// scraped by a local Prometheus (or a tunnel) should be by default.
const DefaultListen = "127.0.0.1:9717"

// Options of the agent.
type Options struct {
	Listen string // host:port of /metrics
	// Socket is the control API's unix socket ("": none).
	Socket string
	// Control changes targets and SLOs at run time (the API, SIGHUP);
	// nil: none, and no API.
	Control *Control
	// Archive, when set, gets the new worst and the violation windows,
	// served by the API; Run closes it.
	Archive *Archive
	// Watch is the session: targets, SLOs, analysis, housekeeping, run as
	// an agent (watch.RunAgent) that the exporter and the archive observe.
	Watch watch.Options
	// Tick is how often the live tasks' statistics are read for /metrics
	// (default 1s): a scrape sees values at most this old.
	Tick time.Duration
	Log  io.Writer
	// Ready, when set, is called with the listening address once the
	// engine is attached and /metrics serves.
	Ready func(addr string)
	// Intrusions, when set, attaches the isolation collector to its CPUs
	// and exports their intrusions (intrusions.go); nil: nothing attached.
	Intrusions *IntrusionOptions
}

// Run serves /metrics and watches until ctx ends. It survives the exit of
// every target: comm targets pick up new tasks whenever they appear.
func Run(ctx context.Context, o Options) error {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	// Listen first: a busy port fails before the engine loads.
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	x := NewExporter()
	x.SetPlaces(target.TaskPlace)
	srv, stopIntrusions, err := o.metrics(x)
	if err != nil {
		_ = ln.Close() // failing anyway
		return err
	}
	defer func() { _ = srv.Close(); stopIntrusions() }() // stops serving; nothing to report at exit
	var api *http.Server
	var apiLn net.Listener
	if o.Control != nil && o.Socket != "" {
		apiLn, err = listenSocket(o.Socket)
		if err != nil {
			_ = ln.Close() // failing anyway
			return err
		}
		api = &http.Server{Handler: apiHandler(o.Control, o.Archive), ReadHeaderTimeout: 10 * time.Second}
		defer func() {
			_ = api.Close()         // stops serving; nothing to report at exit
			_ = os.Remove(o.Socket) // the next agent would replace it anyway
		}()
	}
	if o.Control != nil {
		defer o.Control.Ended()
	}

	obs := o.observer(x)
	if o.Archive != nil {
		defer o.Archive.Close() // after the session: it adds no more
	}
	serveErr := make(chan error, 2) // /metrics and the API
	agent := watch.Agent{Observer: obs, TickEvery: o.Tick, Ready: func() {
		go func() { serveErr <- srv.Serve(ln) }()
		if api != nil {
			go func() { serveErr <- api.Serve(apiLn) }()
		}
		if o.Ready != nil {
			o.Ready(ln.Addr().String())
		}
	}}
	if o.Control != nil {
		agent.Control = o.Control.Hook()
	}
	w := o.Watch
	w.Log = o.Log
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	httpErr := make(chan error, 1) // the server's failure, which ends the run
	go func() {
		select {
		case err := <-serveErr:
			if !errors.Is(err, http.ErrServerClosed) {
				httpErr <- err
				cancel()
			}
		case <-ctx.Done():
		}
	}()
	if err := watch.RunAgent(ctx, w, agent); err != nil {
		return err
	}
	select {
	case err := <-httpErr:
		return fmt.Errorf("serve /metrics on %s or the API on %s: %w", o.Listen, o.Socket, err)
	default:
	}
	return nil
}

// observer is what watches the session: the exporter x, then the control
// API's view and the archive when there are.
func (o *Options) observer(x *Exporter) watch.Observer {
	var obs watch.Observer = x
	if o.Control != nil {
		obs = controlled{Observer: obs, control: o.Control}
	}
	if o.Archive != nil {
		obs = archiving{Observer: obs, archive: o.Archive}
	}
	return obs
}

// metrics is the /metrics server of x, with the intrusion counters when
// o.Intrusions asks for them (their collector attached: stop detaches it).
func (o *Options) metrics(x *Exporter) (srv *http.Server, stop func(), err error) {
	if o.Intrusions == nil {
		return metricsServer(x, o.Control), func() {}, nil
	}
	in, stop, err := startIntrusions(o.Intrusions, x, o.tick(), logTo(o.Log))
	if err != nil {
		return nil, nil, err
	}
	return metricsServer(x, o.Control, in), stop, nil
}

// tick is o.Tick, or a second (watch.Agent's default).
func (o *Options) tick() time.Duration {
	if o.Tick > 0 {
		return o.Tick
	}
	return time.Second
}

// logTo is w, or nowhere when nil.
func logTo(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// metricsServer serves the exporter's and the process's metrics on
// /metrics, the number of targets of c (nil: none), and extra's.
func metricsServer(x *Exporter, c *Control, extra ...prometheus.Collector) *http.Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(extra...)
	reg.MustRegister(x, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector(),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtscope_up", Help: "1 while the agent's engine is attached."},
			func() float64 { return 1 }))
	if c != nil {
		// An idle agent (no target yet) says so: 0 here, and no per-target
		// series.
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rtscope_targets",
			Help: "Targets (comm, pid, tid, cgroup) the agent watches now."}, func() float64 { return float64(c.Targets()) }))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg,
		// Native histograms need the protobuf format; the text format
		// carries the classic buckets.
		EnableOpenMetrics: true}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "rtscope serve: metrics at /metrics")
	})
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}

// archiving observes the agent's watch with the exporter, and its windows
// with the archive (watch.WindowObserver).
type archiving struct {
	watch.Observer
	archive *Archive
}

// Window archives a new worst case or an explained violation's window.
func (a archiving) Window(worst bool, t *report.Task, m metric.ID, value uint64, get func() (*trace.Trace, report.Explanation)) {
	a.archive.Add(worst, t, m, value, get)
}

// controlled observes the agent's watch with the exporter, and hands each
// tick's live tasks to the control too (Control.Observe), which answers
// GET /v1/targets from them without a read of its own.
type controlled struct {
	watch.Observer
	control *Control
}

// Tick publishes the tasks tracked, then ticks the exporter.
func (c controlled) Tick(e *engine.Engine, live []*engine.TaskStats, windowsLost uint64) {
	c.control.Observe(e, live)
	c.Observer.Tick(e, live, windowsLost)
}

var (
	_ watch.Observer       = (*Exporter)(nil)
	_ watch.Observer       = controlled{}
	_ watch.WindowObserver = archiving{}
)

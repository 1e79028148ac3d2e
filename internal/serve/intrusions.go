package serve

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/isolation"
)

// Intrusions on /metrics (serve --intrusions, docs/isolation.md): what
// rtscope isolation counts on the watched CPUs, per CPU and cause, as
// counters. Senders, tasks, IRQ names and work functions are folded: they
// are unbounded (every task that runs on the CPU, every sender), and
// `rtscope isolation` names them; the labels are CPUs times causes.

// IntrusionOptions are serve --intrusions: the CPUs watched by the
// isolation collector, and the workload's COMMs.
type IntrusionOptions struct {
	CPUs []int
	// Allow: the tasks that belong on the CPUs, not counted as task
	// intrusions; the agent's targets' tasks are added to them.
	Allow []string
}

// intrusions is the counters' state: each CPU and cause's count and time
// since the start, never going down.
type intrusions struct {
	mu sync.Mutex
	// total: what the counters say; last: the previous Totals. A counter
	// grows by the rises of its cause's total only: a task that becomes
	// the workload (a comm target picked up later) takes its time out of
	// the task total, and a Prometheus counter must never go down.
	total   map[intrusionKey]*isolation.CauseTotal
	order   []intrusionKey
	last    map[intrusionKey]isolation.CauseTotal
	readErr uint64 // failed reads
	count   *prometheus.Desc
	seconds *prometheus.Desc
	errs    *prometheus.Desc
}

type intrusionKey struct {
	cpu   int
	cause string
}

func newIntrusions() *intrusions {
	cl := []string{"cpu", "cause"}
	return &intrusions{total: map[intrusionKey]*isolation.CauseTotal{}, last: map[intrusionKey]isolation.CauseTotal{},
		count: prometheus.NewDesc("rtscope_cpu_intrusions_total",
			"Intrusions into a watched CPU, by cause (ipi, irq, softirq, work, task: IPIs received, device IRQs and softirqs run, "+
				"work items run, switch-outs of tasks other than the workload); serve --intrusions.", cl, nil),
		seconds: prometheus.NewDesc("rtscope_cpu_intrusion_seconds_total",
			"Time of the intrusions into a watched CPU, by cause (work runs inside its kworker's task time); serve --intrusions.", cl, nil),
		errs: prometheus.NewDesc("rtscope_intrusion_read_errors_total",
			"Reads of the isolation counters that failed (the counters kept their values); serve --intrusions.", nil, nil)}
}

// update adds the rises of t's totals to the counters.
func (in *intrusions) update(t []isolation.CauseTotal) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, c := range t {
		k := intrusionKey{c.CPU, c.Cause}
		tot := in.total[k]
		if tot == nil {
			tot = &isolation.CauseTotal{CPU: c.CPU, Cause: c.Cause}
			in.total[k] = tot
			in.order = append(in.order, k)
		}
		prev := in.last[k]
		if c.Count > prev.Count {
			tot.Count += c.Count - prev.Count
		}
		if c.Ns > prev.Ns {
			tot.Ns += c.Ns - prev.Ns
		}
		in.last[k] = c
	}
}

// failed counts a failed read; it returns how many failed so far.
func (in *intrusions) failed() uint64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.readErr++
	return in.readErr
}

// Describe sends nothing: an unchecked collector, as the Exporter.
func (in *intrusions) Describe(chan<- *prometheus.Desc) {}

// Collect writes the counters.
func (in *intrusions) Collect(ch chan<- prometheus.Metric) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range in.order {
		t := in.total[k]
		cpu := strconv.Itoa(k.cpu)
		ch <- prometheus.MustNewConstMetric(in.count, prometheus.CounterValue, float64(t.Count), cpu, k.cause)
		ch <- prometheus.MustNewConstMetric(in.seconds, prometheus.CounterValue, float64(t.Ns)/1e9, cpu, k.cause)
	}
	ch <- prometheus.MustNewConstMetric(in.errs, prometheus.CounterValue, float64(in.readErr))
}

// totalsOf judges a snapshot with the workload allow (the agent's target
// tasks and --intrusions-allow): its totals by CPU and cause.
func totalsOf(s *isolation.Snapshot, allow []string) []isolation.CauseTotal {
	s.Allow = allow
	return isolation.Totals(isolation.Analyze(s))
}

// workload is o.Allow and the COMMs of the tasks x tracks, sorted, once each.
func (x *Exporter) workload(o *IntrusionOptions) []string {
	seen := map[string]bool{}
	for _, a := range o.Allow {
		seen[a] = true
	}
	x.mu.Lock()
	for _, st := range x.live {
		seen[engine.CommString(st.Comm)] = true
	}
	x.mu.Unlock()
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// startIntrusions attaches the isolation collector to o.CPUs and reads it
// every tick; the returned function stops the reads and detaches it.
func startIntrusions(o *IntrusionOptions, x *Exporter, every time.Duration, log io.Writer) (*intrusions, func(), error) {
	ss, err := isolation.Start(isolation.Options{CPUs: o.CPUs, Allow: o.Allow})
	if err != nil {
		return nil, nil, fmt.Errorf("--intrusions: %w", err)
	}
	in := newIntrusions()
	read := func() {
		s, err := ss.Snapshot()
		if err != nil {
			if in.failed() == 1 { // once: a tick's error would repeat every tick
				fmt.Fprintf(log, "rtscope serve: reading the intrusion counters: %v\n", err)
			}
			return
		}
		in.update(totalsOf(s, x.workload(o)))
	}
	read() // every counter exists, zero, from the first scrape
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			ss.Close()
		})
	}
	return in, stop, nil
}

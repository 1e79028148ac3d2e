package sched

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Throttling is the machine's configuration of real-time throttling: the
// rt_rq bandwidth (sched_rt_runtime_us of every sched_rt_period_us, which
// throttles real-time tasks on kernels before 6.12) and the fair server
// (Linux 6.12+: a DEADLINE server per CPU that runs SCHED_OTHER tasks for
// its runtime of every period when real-time tasks starve them; in debugfs,
// so often unreadable).
type Throttling struct {
	// RTRuntimeNs and RTPeriodNs: sched_rt_runtime_us and
	// sched_rt_period_us in ns (runtime -1: no limit); null when unreadable.
	RTRuntimeNs *int64 `json:"rt_runtime_ns"`
	RTPeriodNs  *int64 `json:"rt_period_ns"`
	// FairServer: each CPU's fair server where readable.
	FairServer []FairServer `json:"fair_server,omitempty"`
	// FairServerUnreadable says why the fair server's parameters are not
	// shown (debugfs not mounted, not permitted, an older kernel).
	FairServerUnreadable string `json:"fair_server_unreadable,omitempty"`
}

// FairServer is one CPU's fair server: SCHED_OTHER tasks get RuntimeNs of
// every PeriodNs on that CPU, whatever the real-time tasks want.
type FairServer struct {
	CPU       int    `json:"cpu"`
	RuntimeNs uint64 `json:"runtime_ns"`
	PeriodNs  uint64 `json:"period_ns"`
}

// fairServerDir is the fair server's debugfs directory (Linux 6.12+).
const fairServerDir = "sys/kernel/debug/sched/fair_server"

// ReadThrottling reads the throttling configuration from fsys, a view of
// the root file system (os.DirFS("/")).
func ReadThrottling(fsys fs.FS) Throttling {
	var t Throttling
	if v, ok := readInt(fsys, "proc/sys/kernel/sched_rt_runtime_us"); ok {
		if v > 0 {
			v *= 1000
		}
		t.RTRuntimeNs = &v
	}
	if v, ok := readInt(fsys, "proc/sys/kernel/sched_rt_period_us"); ok {
		v *= 1000
		t.RTPeriodNs = &v
	}
	t.FairServer, t.FairServerUnreadable = readFairServers(fsys)
	return t
}

func readInt(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// readFairServers reads fair_server/cpuN/{runtime,period} (ns), or says
// why it cannot.
func readFairServers(fsys fs.FS) ([]FairServer, string) {
	ents, err := fs.ReadDir(fsys, fairServerDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, e := fs.Stat(fsys, "sys/kernel/debug/sched"); e == nil {
			return nil, "no fair server (a kernel before 6.12: sched_rt_runtime_us throttles)"
		}
		return nil, "debugfs not mounted (mount -t debugfs none /sys/kernel/debug)"
	case err != nil:
		return nil, "/" + fairServerDir + ": " + errText(err)
	}
	var out []FairServer
	why := ""
	for _, e := range ents {
		cpu, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "cpu"))
		if err != nil || !strings.HasPrefix(e.Name(), "cpu") {
			continue
		}
		dir := fairServerDir + "/" + e.Name()
		run, err1 := readUint(fsys, dir+"/runtime")
		per, err2 := readUint(fsys, dir+"/period")
		if err := errors.Join(err1, err2); err != nil {
			why = fmt.Sprintf("/%s/runtime: %s", dir, errText(err))
			continue
		}
		out = append(out, FairServer{CPU: cpu, RuntimeNs: run, PeriodNs: per})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPU < out[j].CPU })
	if len(out) > 0 {
		why = ""
	}
	return out, why
}

func readUint(fsys fs.FS, name string) (uint64, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// errText words a read error briefly: "operation not permitted" is what
// a locked-down debugfs answers even to root.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

// Share returns the share SCHED_OTHER tasks are guaranteed on cpu: the
// fair server's runtime and period where read, else what rt_rq throttling
// leaves them (period - runtime), else 0, 0.
func (t Throttling) Share(cpu int) (runtimeNs, periodNs uint64) {
	for _, f := range t.FairServer {
		if f.CPU == cpu {
			return f.RuntimeNs, f.PeriodNs
		}
	}
	if len(t.FairServer) == 0 && t.RTRuntimeNs != nil && t.RTPeriodNs != nil && *t.RTRuntimeNs >= 0 && *t.RTPeriodNs > *t.RTRuntimeNs {
		return uint64(*t.RTPeriodNs - *t.RTRuntimeNs), uint64(*t.RTPeriodNs)
	}
	return 0, 0
}

// Words describes the configuration in one line, for doctor and the text report.
func (t Throttling) Words() string {
	rt := "sched_rt_runtime_us unreadable"
	if t.RTRuntimeNs != nil && t.RTPeriodNs != nil {
		if *t.RTRuntimeNs < 0 {
			rt = fmt.Sprintf("sched_rt_runtime_us -1 of sched_rt_period_us %d", *t.RTPeriodNs/1000)
		} else {
			rt = fmt.Sprintf("sched_rt_runtime_us %d of sched_rt_period_us %d", *t.RTRuntimeNs/1000, *t.RTPeriodNs/1000)
		}
	}
	if len(t.FairServer) == 0 {
		return rt + "; fair server: " + t.FairServerUnreadable
	}
	var cpus []string
	for _, f := range t.FairServer {
		cpus = append(cpus, fmt.Sprintf("CPU %d %d/%d us", f.CPU, f.RuntimeNs/1000, f.PeriodNs/1000))
	}
	return rt + "; fair server runtime/period: " + strings.Join(cpus, ", ")
}

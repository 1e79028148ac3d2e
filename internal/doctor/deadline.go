package doctor

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SCHED_DEADLINE admission control (issue 38 item 1): the kernel admits a
// DEADLINE task only while the reservations (runtime/period) of a root
// domain's DEADLINE tasks fit in sched_rt_runtime_us/sched_rt_period_us
// of each of its CPUs (-1: no admission control); sched_setattr fails with
// EBUSY past it. The fair server's reservations (6.12+) count too, and are
// not seen here.

// schedDeadline is SCHED_DEADLINE's policy number.
const schedDeadline = 6

// dlReservation reads a DEADLINE thread's runtime and period (ns); tests
// replace it, the live machine asks the kernel (sched_getattr).
var dlReservation = func(tid int) (runtime, period uint64, ok bool) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil || a.Policy != schedDeadline {
		return 0, 0, false
	}
	return a.Runtime, a.Period, true
}

// dlThread is a DEADLINE thread found in /proc with its reservation.
type dlThread struct {
	tid             int
	comm            string
	runtime, period uint64
}

// deadlineThreads lists the DEADLINE threads of /proc (policy: stat field 41).
func deadlineThreads(m *machine) []dlThread {
	var out []dlThread
	pids, _ := fs.ReadDir(m.fsys, "proc")
	for _, p := range pids {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		tasks, _ := fs.ReadDir(m.fsys, path.Join("proc", p.Name(), "task"))
		for _, tk := range tasks {
			stat, ok := m.read(path.Join("proc", p.Name(), "task", tk.Name(), "stat"))
			i := strings.LastIndexByte(stat, ')')
			if !ok || i < 0 {
				continue
			}
			f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
			if len(f) < 39 || f[38] != strconv.Itoa(schedDeadline) {
				continue
			}
			tid, _ := strconv.Atoi(tk.Name())
			d := dlThread{tid: tid, comm: stat[strings.IndexByte(stat, '(')+1 : i]}
			d.runtime, d.period, _ = dlReservation(tid)
			out = append(out, d)
		}
	}
	return out
}

// checkDeadlineBandwidth says how much of each CPU DEADLINE tasks may
// reserve, and how much the DEADLINE tasks present reserve.
func checkDeadlineBandwidth(m *machine, _ *Env) Check {
	c := Check{Name: "deadline_bandwidth", Status: Info}
	rt, ok := m.read("proc/sys/kernel/sched_rt_runtime_us")
	period, _ := m.read("proc/sys/kernel/sched_rt_period_us")
	if !ok {
		c.Status, c.Evidence = Skip, "/proc/sys/kernel/sched_rt_runtime_us unreadable"
		return c
	}
	r, _ := strconv.ParseInt(rt, 10, 64)
	p, _ := strconv.ParseInt(period, 10, 64)
	cpus := max(len(m.online), 1)
	limit := float64(cpus)
	if r < 0 || p <= 0 {
		c.Evidence = "no DEADLINE admission control (sched_rt_runtime_us -1): any reservation is admitted, even one the CPUs cannot serve"
	} else {
		limit = float64(r) / float64(p) * float64(cpus)
		c.Evidence = fmt.Sprintf("DEADLINE tasks may reserve %.1f%% of each CPU (sched_rt_runtime_us %d of sched_rt_period_us %d): %.2f CPUs of %d",
			float64(r)*100/float64(p), r, p, limit, cpus)
	}
	var reserved float64
	var names []string
	threads := deadlineThreads(m)
	for _, d := range threads {
		if d.period > 0 {
			reserved += float64(d.runtime) / float64(d.period)
		}
		if len(names) < 4 {
			names = append(names, fmt.Sprintf("%s/%d %d/%d us", d.comm, d.tid, d.runtime/1000, d.period/1000))
		}
	}
	c.Data = map[string]any{"rt_runtime_us": r, "rt_period_us": p, "cpus": cpus, "available_cpus": limit,
		"deadline_threads": len(threads), "reserved_cpus": reserved}
	if len(threads) == 0 {
		c.Evidence += "; no DEADLINE task now"
		return c
	}
	c.Evidence += fmt.Sprintf("; %d DEADLINE thread(s) reserve %.2f CPUs (%s)", len(threads), reserved, strings.Join(names, ", "))
	if reserved > limit*0.9 {
		c.Status = Warn
		c.Remedy = "a new DEADLINE task will be refused (EBUSY) once the reservations pass the limit; shorten runtimes or lengthen periods"
	}
	return c
}

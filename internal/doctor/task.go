package doctor

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rtscope/rtscope/internal/sched"
)

// thread is one target thread as /proc shows it.
type thread struct {
	Task
	dir string // proc/PID/task/TID
}

// resolve turns the targets into threads: a tid, every thread of a pid, or
// every thread whose name is a comm.
func resolve(fsys fs.FS, t Targets) ([]thread, error) {
	seen := map[int]bool{}
	var out []thread
	add := func(pid, tid int) {
		if seen[tid] {
			return
		}
		seen[tid] = true
		dir := fmt.Sprintf("proc/%d/task/%d", pid, tid)
		comm, _ := fs.ReadFile(fsys, dir+"/comm")
		out = append(out, thread{Task{TID: tid, PID: pid, Comm: strings.TrimSpace(string(comm))}, dir})
	}
	threads := func(pid int) ([]int, error) {
		ents, err := fs.ReadDir(fsys, fmt.Sprintf("proc/%d/task", pid))
		if err != nil {
			return nil, err
		}
		var tids []int
		for _, e := range ents {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				tids = append(tids, n)
			}
		}
		sort.Ints(tids)
		return tids, nil
	}
	for _, tid := range t.TIDs {
		// /proc/TID is reachable for any thread; its Tgid names the process.
		st, err := fs.ReadFile(fsys, fmt.Sprintf("proc/%d/status", tid))
		if err != nil {
			return nil, fmt.Errorf("--tid %d: no such thread", tid)
		}
		pid := tid
		if v := statusField(string(st), "Tgid"); v != "" {
			pid, _ = strconv.Atoi(v)
		}
		add(pid, tid)
	}
	for _, pid := range t.PIDs {
		tids, err := threads(pid)
		if err != nil {
			return nil, fmt.Errorf("--pid %d: no such process", pid)
		}
		for _, tid := range tids {
			add(pid, tid)
		}
	}
	if len(t.Comms) > 0 {
		want := map[string]bool{}
		for _, c := range t.Comms {
			want[c] = true
		}
		found := map[string]bool{}
		procs, _ := fs.ReadDir(fsys, "proc")
		for _, p := range procs {
			pid, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			tids, _ := threads(pid)
			for _, tid := range tids {
				b, _ := fs.ReadFile(fsys, fmt.Sprintf("proc/%d/task/%d/comm", pid, tid))
				if n := strings.TrimSpace(string(b)); want[n] {
					found[n] = true
					add(pid, tid)
				}
			}
		}
		for _, c := range t.Comms {
			if !found[c] {
				return nil, fmt.Errorf("--comm %s: no task has this name", c)
			}
		}
	}
	return out, nil
}

func statusField(status, key string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// taskChecks checks one thread's policy, memory locking and affinity. PI
// mutex use needs the thread's futex waits, which only the engine sees:
// PICheck judges them from a watch run (doctor --watch).
func taskChecks(m *machine, t thread) []Check {
	task := t.Task
	stat, _ := fs.ReadFile(m.fsys, t.dir+"/stat")
	status, _ := fs.ReadFile(m.fsys, t.dir+"/status")
	pstatus, _ := fs.ReadFile(m.fsys, path.Join("proc", strconv.Itoa(t.PID), "status"))
	return []Check{policyCheck(&task, string(stat)), mlockCheck(&task, string(pstatus)), m.affinityCheck(&task, string(status))}
}

// policyCheck checks a thread's scheduling policy: /proc/.../stat fields 40
// (rt_priority) and 41 (policy), counted after the comm, which may hold
// spaces.
func policyCheck(task *Task, stat string) Check {
	pol := Check{Name: "task_policy", Task: task}
	policy, rtprio, nice, ok := statPolicy(stat)
	switch {
	case !ok:
		pol.Status, pol.Evidence = Skip, "the thread's /proc stat is unreadable (exited?)"
	case sched.IsRT(policy):
		pol.Status = Pass
		pol.Evidence = sched.PolicyName(policy)
		if policy != sched.Deadline {
			pol.Evidence += fmt.Sprintf(" %d", rtprio)
		}
	default:
		pol.Status = Warn
		pol.Evidence = fmt.Sprintf("%s nice %d: not a real-time policy", sched.PolicyName(policy), nice)
		pol.Remedy = "if this thread has a deadline, run it SCHED_FIFO (chrt -f -p PRIO TID, or sched_setscheduler in the program): an OTHER thread shares its CPU fairly with everything else"
	}
	if ok {
		pol.Data = map[string]any{"policy": sched.PolicyName(policy), "rt_priority": rtprio}
	}
	return pol
}

// mlockCheck checks the memory locked by a thread's process: VmLck of its
// /proc/PID/status (pstatus).
func mlockCheck(task *Task, pstatus string) Check {
	lck := Check{Name: "task_mlock", Task: task}
	v := statusField(pstatus, "VmLck")
	if v == "" {
		lck.Status, lck.Evidence = Skip, "VmLck unreadable in /proc/PID/status"
		return lck
	}
	kb, _ := strconv.ParseUint(strings.Fields(v)[0], 10, 64)
	lck.Data = map[string]any{"locked_bytes": kb * 1024}
	lck.Evidence = "VmLck " + v
	if kb == 0 {
		lck.Status = Warn
		lck.Evidence += ": no memory locked"
		lck.Remedy = "call mlockall(MCL_CURRENT|MCL_FUTURE) at start (and pre-fault the stack and heap): an unlocked page may fault in from disk (milliseconds)"
	} else {
		lck.Status = Pass
	}
	return lck
}

// affinityCheck checks that a thread may run on isolated CPUs only, and
// that no device IRQ lands there (its Cpus_allowed_list in status).
func (m *machine) affinityCheck(task *Task, status string) Check {
	aff := Check{Name: "task_affinity", Task: task}
	cpus := m.listOf(statusField(status, "Cpus_allowed_list"))
	if cpus == nil {
		aff.Status, aff.Evidence = Skip, "Cpus_allowed_list unreadable"
		return aff
	}
	aff.Data = map[string]any{"cpus": fmtList(cpus)}
	aff.Evidence = "may run on CPUs " + fmtList(cpus)
	var why []string
	if len(m.isolated) == 0 {
		why = append(why, "no CPU is isolated: it shares every CPU with housekeeping work")
	} else if house := minus(cpus, m.isolated); len(house) > 0 {
		why = append(why, "housekeeping (not isolated) CPUs "+fmtList(house)+" are among them")
	}
	if irqs := m.irqsOn(cpus); len(irqs) > 0 {
		shown := irqs
		if len(shown) > 8 {
			shown = append(append([]string{}, irqs[:8]...), "...")
		}
		why = append(why, fmt.Sprintf("%d device IRQs may land there (%s)", len(irqs), strings.Join(shown, " ")))
	}
	if len(why) == 0 {
		aff.Status = Pass
		aff.Evidence += " (isolated, no device IRQ)"
		return aff
	}
	aff.Status = Warn
	aff.Evidence += ": " + strings.Join(why, "; ")
	aff.Remedy = "pin it to isolated CPUs (taskset -p -c LIST TID, or sched_setaffinity) and move IRQs away from them"
	return aff
}

// irqsOn returns the device IRQs that may land on cpus, unless cpus are
// all the online CPUs (an unpinned thread: its IRQs are not a finding).
func (m *machine) irqsOn(cpus []int) []string {
	var irqs []string
	for _, q := range m.irqs {
		if len(intersect(q.cpus, cpus)) > 0 && len(cpus) < len(m.online) {
			irqs = append(irqs, q.num)
		}
	}
	return irqs
}

func (m *machine) listOf(s string) []int {
	if s == "" {
		return nil
	}
	return cmdlineCPUs(s)
}

// statPolicy reads policy, rt_priority and nice from /proc/.../stat.
func statPolicy(stat string) (policy uint32, rtprio, nice int, ok bool) {
	i := strings.LastIndex(stat, ")")
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 39 {
		return 0, 0, 0, false
	}
	p, err1 := strconv.ParseUint(f[41-3], 10, 32)
	r, err2 := strconv.Atoi(f[40-3])
	n, err3 := strconv.Atoi(f[19-3])
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0, false
	}
	return uint32(p), r, n, true
}

// PIUse is what a short rtscope watch run saw of one thread's locking
// (filled by the command line from the watch report: doctor itself loads
// no BPF).
type PIUse struct {
	Task      Task
	Policy    string        // OTHER, FIFO, ...
	RT        bool          // a real-time policy
	Windows   int           // worst-case windows analysed
	FutexNoPI uint64        // futex waits without PI in them (hygiene futex_waits_without_pi)
	Watched   time.Duration // how long it was watched
}

// PICheck judges a thread's mutexes: an RT thread seen waiting on a futex
// without priority inheritance risks unbounded priority inversion when a
// lower-priority thread holds the lock.
func PICheck(u PIUse) Check {
	task := u.Task
	c := Check{Name: "task_pi", Task: &task, Data: map[string]any{"futex_waits_without_pi": u.FutexNoPI, "windows": u.Windows,
		"watched_ns": u.Watched.Nanoseconds()}}
	switch {
	case !u.RT:
		c.Status, c.Evidence = Skip, u.Policy+": priority inheritance matters to real-time threads"
	case u.FutexNoPI > 0:
		c.Status = Warn
		c.Evidence = fmt.Sprintf("%d futex waits without priority inheritance in its %d worst-case windows over %v (rtscope watch)", u.FutexNoPI, u.Windows, u.Watched)
		c.Remedy = "use PTHREAD_PRIO_INHERIT mutexes (pthread_mutexattr_setprotocol) for locks shared with lower-priority threads: a plain futex lets a middle-priority task delay it without bound"
	case u.Windows == 0:
		c.Status, c.Evidence = Skip, fmt.Sprintf("no worst-case window in %v of watching (no samples, or --no-trace)", u.Watched)
	default:
		c.Status = Pass
		c.Evidence = fmt.Sprintf("no futex wait without priority inheritance in its %d worst-case windows over %v (rtscope watch)", u.Windows, u.Watched)
	}
	return c
}

// Add appends checks (task_pi from a watch run) and recounts the summary.
func (r *Report) Add(cs ...Check) {
	r.Checks = append(r.Checks, cs...)
	r.finish(r.Strict)
}

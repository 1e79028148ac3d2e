package doctor

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// overlay serves files from over before base: a test changes over during
// the steal sample to make /proc/stat advance.
type overlay struct {
	over fstest.MapFS
	base fs.FS
}

func (o overlay) Open(name string) (fs.File, error) {
	if _, ok := o.over[name]; ok {
		return o.over.Open(name)
	}
	return o.base.Open(name)
}

// statAfter returns an Env.Sleep that makes /proc/stat show steal more
// ticks of steal out of total more ticks in all.
func statAfter(o overlay, steal, total int) func(time.Duration) {
	s0, t0, _ := stealTicks(load(o.base))
	return func(time.Duration) {
		user, st := int(t0-s0)+total-steal, int(s0)+steal
		o.over["proc/stat"] = &fstest.MapFile{Data: []byte("cpu  " + itoa(user) + " 0 0 0 0 0 0 " + itoa(st) + " 0 0\n")}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func run(t *testing.T, fixture string, env Env) *Report {
	t.Helper()
	o := overlay{over: fstest.MapFS{}, base: os.DirFS("testdata/" + fixture)}
	env.FS = o
	if env.Sample > 0 && env.Sleep == nil {
		env.Sleep = statAfter(o, 0, 200)
	}
	r, err := Run(env)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func expect(t *testing.T, r *Report, want map[string]Status) {
	t.Helper()
	for name, st := range want {
		c := r.Get(name)
		if c == nil {
			t.Errorf("no check %s", name)
			continue
		}
		if c.Status != st {
			t.Errorf("%s: %s (%s), want %s", name, c.Status, c.Evidence, st)
		}
		if (c.Status == Warn || c.Status == Fail) && c.Remedy == "" {
			t.Errorf("%s: %s without a remedy", name, c.Status)
		}
	}
}

// TestHost: the development VM (testdata/host, made by capture.sh):
// PREEMPT_DYNAMIC in its build default none, nothing isolated, haltpoll
// idle, no cpufreq, a hypervisor known only by the CPU flag, tsc.
func TestHost(t *testing.T) {
	r := run(t, "host", Env{Sample: time.Second})
	expect(t, r, map[string]Status{
		"preemption": Fail, "isolcpus": Warn, "nohz_full": Skip, "rcu_nocbs": Skip, "irq_affinity": Skip,
		"idle_states": Pass, "cpufreq_governor": Info, "cpufreq_boost": Skip, "rt_throttling": Warn,
		"thp": Pass, "swap": Pass, "damon": Warn, "smt": Info, "timer_migration": Warn, "watchdogs": Pass,
		"hypervisor": Warn, "clocksource": Pass, "rtscope_ready": Info,
	})
	if d := r.Get("damon"); !strings.Contains(d.Evidence, "kdamond 0 (paddr, pageout)") {
		t.Errorf("damon: %s, want kdamond 0 running a paddr pageout scheme", d.Evidence)
	}
	p := r.Get("preemption")
	if p.Data["model"] != "none" || !strings.Contains(p.Evidence, "/proc/config.gz: CONFIG_PREEMPT_NONE=y") {
		t.Errorf("preemption: %v (%s), want none from the config's default", p.Data["model"], p.Evidence)
	}
	if r.ExitStatus != ExitFailed {
		t.Errorf("exit status %d, want %d (a failed check)", r.ExitStatus, ExitFailed)
	}
	if h := r.Get("hypervisor"); h.Data["hypervisor"] != "KVM" || h.Data["steal_fraction"] != 0.0 || h.Data["cpu_ns"] != uint64(2_000_000_000) {
		t.Errorf("hypervisor: %s; want 0 steal in 200 ticks", h.Evidence)
	}
}

// TestRTTuned: a PREEMPT_RT box set up as tuned's realtime profile does.
func TestRTTuned(t *testing.T) {
	r := run(t, "rt-tuned", Env{Sample: time.Second, Targets: Targets{PIDs: []int{1000}}})
	expect(t, r, map[string]Status{
		"preemption": Pass, "isolcpus": Pass, "nohz_full": Pass, "rcu_nocbs": Pass, "irq_affinity": Pass,
		"idle_states": Pass, "cpufreq_governor": Pass, "cpufreq_boost": Pass, "rt_throttling": Pass,
		"thp": Pass, "swap": Pass, "damon": Pass, "smt": Pass, "timer_migration": Pass, "watchdogs": Pass,
		"hypervisor": Pass, "clocksource": Pass, "rtscope_ready": Info,
	})
	if m := r.Get("preemption").Data["model"]; m != "rt" {
		t.Errorf("model %v, want rt", m)
	}
	// cpu_dma_latency 0 leaves only POLL: C6's 133 us is out of reach.
	if d := r.Get("idle_states").Data["deepest_exit_latency_ns"]; d != int64(0) {
		t.Errorf("deepest exit latency %v ns, want 0 under cpu_dma_latency 0", d)
	}
	tasks := map[int]map[string]Status{}
	for _, c := range r.Checks {
		if c.Task != nil {
			if tasks[c.Task.TID] == nil {
				tasks[c.Task.TID] = map[string]Status{}
			}
			tasks[c.Task.TID][c.Name] = c.Status
		}
	}
	want := map[int]map[string]Status{
		1000: {"task_policy": Warn, "task_mlock": Pass, "task_affinity": Warn}, // the OTHER main thread on housekeeping CPUs
		1001: {"task_policy": Pass, "task_mlock": Pass, "task_affinity": Pass},
	}
	for tid, w := range want {
		for n, st := range w {
			if tasks[tid][n] != st {
				t.Errorf("tid %d %s: %s, want %s", tid, n, tasks[tid][n], st)
			}
		}
	}
	if r.Summary.Fail != 0 || r.ExitStatus != ExitOK {
		t.Errorf("summary %+v, exit %d: want no failure", r.Summary, r.ExitStatus)
	}
	r.SetStrict(true)
	if r.ExitStatus != ExitFailed {
		t.Errorf("--strict with %d warnings: exit %d, want %d", r.Summary.Warn, r.ExitStatus, ExitFailed)
	}
}

// TestBad: a desktop kernel in voluntary mode on a Xen guest losing 10% to
// steal, half-isolated, with every default left as it is.
func TestBad(t *testing.T) {
	o := overlay{over: fstest.MapFS{}, base: os.DirFS("testdata/bad")}
	r, err := Run(Env{FS: o, Sample: time.Second, Sleep: statAfter(o, 40, 400), Targets: Targets{Comms: []string{"app"}}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, r, map[string]Status{
		"preemption": Fail, "isolcpus": Pass, "nohz_full": Warn, "rcu_nocbs": Warn, "irq_affinity": Warn,
		"idle_states": Warn, "cpufreq_governor": Warn, "cpufreq_boost": Warn, "rt_throttling": Warn,
		"thp": Warn, "swap": Warn, "damon": Warn, "smt": Warn, "timer_migration": Warn, "watchdogs": Warn,
		"hypervisor": Fail, "clocksource": Warn, "rtscope_ready": Info,
		"task_policy": Warn, "task_mlock": Warn, "task_affinity": Warn,
	})
	p := r.Get("preemption")
	if p.Data["model"] != "voluntary" || !strings.Contains(p.Evidence, "/boot/config-6.8.0-45-generic") {
		t.Errorf("preemption %v (%s): want voluntary from /boot/config", p.Data["model"], p.Evidence)
	}
	h := r.Get("hypervisor")
	if h.Data["hypervisor"] != "xen" || h.Data["steal_fraction"] != 0.1 || h.Data["steal_ns"] != uint64(400_000_000) {
		t.Errorf("hypervisor %v steal %v (%v ns), want xen, 0.1 and 400 ms", h.Data["hypervisor"], h.Data["steal_fraction"], h.Data["steal_ns"])
	}
	// C10 is disabled: the deepest reachable state is C6.
	if d := r.Get("idle_states").Data["deepest_exit_latency_ns"]; d != int64(133_000) {
		t.Errorf("deepest exit latency %v, want 133000 ns (C10 disabled)", d)
	}
	if irq := r.Get("irq_affinity"); !strings.Contains(irq.Evidence, "24 enp0s3 -> 3") || strings.Contains(irq.Evidence, "25 ") {
		t.Errorf("irq_affinity: %s; want IRQ 24 on CPU 3 and not 25", irq.Evidence)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "FAIL  preemption") || !strings.Contains(buf.String(), "summary: 1 pass, 17 warn, 2 fail, 2 info, 0 skip") {
		t.Errorf("text:\n%s", buf.String())
	}
}

// TestTargets: unknown targets are errors; --tid finds its process.
func TestTargets(t *testing.T) {
	fsys := os.DirFS("testdata/rt-tuned")
	for _, tg := range []Targets{{PIDs: []int{4242}}, {TIDs: []int{4242}}, {Comms: []string{"nope"}}} {
		if _, err := resolve(fsys, tg); err == nil {
			t.Errorf("%+v: no error for a task that does not exist", tg)
		}
	}
	th, err := resolve(fsys, Targets{TIDs: []int{1001}, Comms: []string{"ctl-rt"}})
	if err != nil || len(th) != 1 || th[0].PID != 1000 || th[0].Comm != "ctl-rt" {
		t.Errorf("tid 1001 and comm ctl-rt: %+v %v, want one thread ctl-rt of pid 1000", th, err)
	}
}

// TestJSON: the document's schema and that checks carry their task.
func TestJSON(t *testing.T) {
	r := run(t, "rt-tuned", Env{Targets: Targets{TIDs: []int{1001}}})
	var buf bytes.Buffer
	if err := r.EncodeJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string `json:"schema"`
		Checks []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Task   *Task  `json:"task"`
		} `json:"checks"`
		Summary Summary `json:"summary"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != Schema || len(doc.Checks) != len(systemChecks)+3 {
		t.Fatalf("schema %q, %d checks; want %s and %d", doc.Schema, len(doc.Checks), Schema, len(systemChecks)+3)
	}
	if last := doc.Checks[len(doc.Checks)-1]; last.Task == nil || last.Task.TID != 1001 {
		t.Errorf("last check %+v: want the task 1001", last)
	}
	if h := r.Get("hypervisor"); !strings.Contains(h.Evidence, "bare metal") {
		t.Errorf("hypervisor: %s", h.Evidence)
	}
}

// TestHypervisorSources: /sys/hypervisor, DMI, the device tree of Arm virt
// machines, then the bare CPU flag.
func TestHypervisorSources(t *testing.T) {
	f := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		files      fstest.MapFS
		name, from string
	}{
		{fstest.MapFS{"sys/hypervisor/type": f("xen\n")}, "xen", "/sys/hypervisor/type"},
		{fstest.MapFS{"sys/class/dmi/id/sys_vendor": f("QEMU\n"), "sys/class/dmi/id/product_name": f("Standard PC (i440FX + PIIX, 1996)\n"),
			"proc/cpuinfo": f("flags\t: fpu hypervisor\n")}, "QEMU Standard PC", "DMI"},
		{fstest.MapFS{"proc/device-tree/compatible": f("linux,dummy-virt\x00")}, "QEMU virt", "device tree"},
		{fstest.MapFS{"proc/cpuinfo": f("flags\t: fpu hypervisor tsc\n")}, "not named", "hypervisor flag"},
		{fstest.MapFS{"proc/cpuinfo": f("flags\t: fpu hypervisor tsc\n"),
			"sys/devices/system/clocksource/clocksource0/available_clocksource": f("tsc kvm-clock\n")}, "KVM", "kvm-clock"},
		{fstest.MapFS{"proc/cpuinfo": f("flags\t: fpu tsc\n"), "sys/class/dmi/id/product_name": f("PowerEdge R650\n")}, "", ""},
	} {
		name, from := hypervisor(load(tc.files))
		if !strings.HasPrefix(name, tc.name) || !strings.Contains(from, tc.from) || (tc.name == "") != (name == "") {
			t.Errorf("%v: %q from %q, want %q from ...%s...", tc.files, name, from, tc.name, tc.from)
		}
	}
}

// TestPICheck: the judgement of a watch run's hygiene, and Add recounting.
func TestPICheck(t *testing.T) {
	task := Task{TID: 7, PID: 7, Comm: "task-H"}
	for _, tc := range []struct {
		u    PIUse
		want Status
	}{
		{PIUse{Task: task, Policy: "FIFO", RT: true, Windows: 8, FutexNoPI: 2}, Warn},
		{PIUse{Task: task, Policy: "FIFO", RT: true, Windows: 8}, Pass},
		{PIUse{Task: task, Policy: "FIFO", RT: true}, Skip},
		{PIUse{Task: task, Policy: "OTHER", Windows: 8, FutexNoPI: 2}, Skip},
	} {
		if c := PICheck(tc.u); c.Status != tc.want || c.Task.TID != 7 || (c.Status == Warn && c.Remedy == "") {
			t.Errorf("%+v: %s (%s), want %s", tc.u, c.Status, c.Evidence, tc.want)
		}
	}
	r := run(t, "rt-tuned", Env{})
	r.SetStrict(false)
	r.Add(PICheck(PIUse{Task: task, Policy: "FIFO", RT: true, Windows: 1, FutexNoPI: 1}))
	if r.Summary.Warn != 1 || r.Get("task_pi") == nil {
		t.Errorf("after Add: %+v", r.Summary)
	}
}

package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/trace"
)

var update = flag.Bool("update", false, "rewrite golden files")

func sampleStats() *engine.TaskStats {
	s := &engine.TaskStats{Id: 3, Tid: 1234, Pid: 1230, Policy: 1, Prio: 19, RtPriority: 80,
		CpusMask: 0b1011, NrCpusAllowed: 3, Exited: 1, Wakeups: 10, SwitchesVoluntary: 10,
		TimerReleases: 9, NominalPeriod: 2000000}
	copy(s.Comm[:], []int8{'c', 'o', 'n', 't', 'r', 'o', 'l'})
	s.Hygiene[0] = 2
	lat := &s.M[metric.Latency]
	for _, v := range []uint64{5000, 7000, 9000, 30000} {
		lat.Count++
		lat.Sum += v
		lat.Hist[metric.Bucket(v)]++
	}
	lat.Min, lat.Max, lat.Slo, lat.Violations = 5000, 30000, 20000, 1
	return s
}

func TestFromStatsUnsetAndIdentity(t *testing.T) {
	tk := FromStats(sampleStats())
	if tk.Comm != "control" || tk.Sched != "FIFO 80" || tk.Priority == nil || *tk.Priority != 80 || tk.Nice != nil {
		t.Errorf("identity: %+v", tk)
	}
	if tk.CPUs != "0-1,3" {
		t.Errorf("cpus %q", tk.CPUs)
	}
	lat := tk.Metrics["latency"]
	if *lat.MinNs != 5000 || *lat.MaxNs != 30000 || *lat.AvgNs != 12750 || *lat.SLONs != 20000 || *lat.Violations != 1 {
		t.Errorf("latency %+v", lat)
	}
	cyc := tk.Metrics["cycle"]
	if cyc.Count != 0 || cyc.MinNs != nil || cyc.AvgNs != nil || cyc.MaxNs != nil || cyc.P99Ns != nil ||
		cyc.SLONs != nil || cyc.Violations != nil {
		t.Errorf("a metric without samples must be unset: %+v", cyc)
	}
	if len(tk.Metrics) != int(metric.Count) {
		t.Errorf("%d metrics, want all %d", len(tk.Metrics), metric.Count)
	}
}

// A task that set its own policy after it started (issue 15, item 7): the
// header and the JSON give the identity it ran with last, and say it
// changed, with every identity seen.
func TestPolicyChangedDuringTheRun(t *testing.T) {
	s := sampleStats()
	s.Policy, s.Prio = 1, 49 // FIFO 50, last seen
	s.SchedChanges = 1
	s.SchedSeen[0] = 1<<31 | 0<<8 | 120 // OTHER nice 0, at discovery
	s.SchedSeen[1] = 1<<31 | 1<<8 | 49
	s.SchedCur, s.SchedMs[0], s.SchedOpenNs = 1, 100, 5_000_000_000 // 0.1 s, then 5 s to its exit
	tk := FromStats(s)
	var buf bytes.Buffer
	Final(&buf, tk, false)
	head := strings.SplitN(buf.String(), "\n", 3)
	if !strings.Contains(head[0], ", FIFO 50,") || head[1] != "   policy changed once during the run: OTHER nice 0 for 0.1 s, FIFO 50 for 5.0 s at exit" {
		t.Errorf("header:\n%s\n%s", head[0], head[1])
	}
	b, err := json.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"policy":"FIFO"`, `"priority":50`, `"sched":"FIFO 50"`,
		`"sched_seen":["OTHER nice 0","FIFO 50"]`, `"sched_changes":1`,
		`"sched_times":[{"sched":"OTHER nice 0","ns":100000000,"last":false},{"sched":"FIFO 50","ns":5000000000,"last":true}]`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	// Unchanged: no history line, its one identity in sched_seen.
	s.SchedChanges, s.SchedSeen[0], s.SchedSeen[1] = 0, 1<<31|1<<8|49, 0
	// cyclictest's thread: OTHER at its creation and again at its exit,
	// FIFO 80 in between; the identity it exits with is named last.
	c := sampleStats()
	c.SchedChanges, c.SchedCur, c.SchedOpenNs = 2, 0, 0
	c.SchedSeen[0], c.SchedSeen[1] = 1<<31|0<<8|120, 1<<31|1<<8|19
	c.SchedMs[0], c.SchedMs[1] = 2, 4998
	if got := FromStats(c).SchedHistory(); got != "policy changed 2 times during the run: FIFO 80 for 5.0 s, OTHER nice 0 for 0.0 s at exit" {
		t.Errorf("cyclictest: %q", got)
	}
	if tk := FromStats(s); tk.SchedHistory() != "" || len(tk.SchedSeen) != 1 || tk.SchedSeen[0] != "FIFO 50" {
		t.Errorf("unchanged task: %q, seen %v", tk.SchedHistory(), tk.SchedSeen)
	}
}

// A periodic task's start-up: its counters line says what was left out,
// the JSON how many iterations and how long; none, no phrase.
func TestStartup(t *testing.T) {
	s := sampleStats()
	s.StartupIterations, s.StartupUs = 3, 54521
	tk := FromStats(s)
	var buf bytes.Buffer
	Final(&buf, tk, false)
	if !strings.Contains(buf.String(), ", period 2000.0 us, start-up: 3 iterations in 54521.0 us left out\n") {
		t.Errorf("counters line:\n%s", buf.String())
	}
	b, err := json.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"startup_iterations":3,"startup_ns":54521000`)) {
		t.Errorf("JSON: %s", b)
	}
	s.StartupIterations, s.StartupUs = 1, 0 // not over yet
	if got := FromStats(s).Startup(); got != "start-up: 1 iteration left out" {
		t.Errorf("start-up not over: %q", got)
	}
	s.StartupIterations = 0
	if got := FromStats(s).Startup(); got != "" {
		t.Errorf("no start-up: %q", got)
	}
}

func TestJSONNullsAndNames(t *testing.T) {
	r := &Report{Schema: Schema, Tasks: []*Task{FromStats(sampleStats())}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	task := generic["tasks"].([]any)[0].(map[string]any)
	m := task["metrics"].(map[string]any)
	for _, name := range metric.Names() {
		if _, ok := m[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	cyc := m["cycle"].(map[string]any)
	for _, k := range []string{"min_ns", "avg_ns", "max_ns", "p50_ns", "p99_9_ns", "slo_ns", "violations", "worst"} {
		if v, ok := cyc[k]; !ok || v != nil {
			t.Errorf("cycle.%s = %v, want null", k, v)
		}
	}
	if task["nice"] != nil || task["priority"].(float64) != 80 {
		t.Errorf("priority/nice: %v %v", task["priority"], task["nice"])
	}
	if strings.Contains(string(b), "9223372036854775807") || strings.Contains(string(b), "18446744073709551615") {
		t.Error("a sentinel value leaked into JSON")
	}
}

func TestFinalTextGolden(t *testing.T) {
	tk := FromStats(sampleStats())
	exp := int64(-42000)
	tk.Metrics["latency"].Worst = &trace.Trace{Metric: "latency", TID: 1234, Value: 30000, CPUs: []int{1}, Events: []trace.Event{
		{T: -500, CPU: 1, Type: "switch", PrevTID: 1234, PrevComm: "control", PrevSched: "FIFO 80", PrevState: "S",
			NextTID: 0, NextComm: "idle"},
		{T: 0, CPU: 1, Type: "wakeup", TID: 1234, Comm: "control", Sched: "FIFO 80", TargetCPU: intp(1),
			Waker: &trace.Waker{Kind: "timer", Function: "hrtimer_wakeup"}, ExpiryT: &exp},
		{T: 1000, CPU: 1, Type: "switch", PrevTID: 0, PrevComm: "idle", PrevState: "R", NextTID: 99, NextComm: "hog",
			NextSched: "FIFO 90"},
		{T: 29000, CPU: 1, Type: "switch", PrevTID: 99, PrevComm: "hog", PrevSched: "FIFO 90", Preempted: true,
			NextTID: 1234, NextComm: "control", NextSched: "FIFO 80"},
	}}
	tk.Metrics["latency"].Verdict = "priority misconfiguration: example"
	var buf bytes.Buffer
	Final(&buf, tk, true)
	Live(&buf, []*Task{tk}, "1s")
	golden := filepath.Join("testdata", "final.golden")
	if *update {
		os.WriteFile(golden, buf.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("text report differs from %s (go test -update to accept):\n%s", golden, buf.String())
	}
}

func intp(v int) *int { return &v }

// judgeCase is a task built from sampleStats (FIFO 80, 2 ms period, 4
// latency samples, one over its 20 us SLO, 2 relative sleeps in 9
// releases), changed by edit.
func judgeCase(edit func(s *engine.TaskStats)) *Task {
	s := sampleStats()
	if edit != nil {
		edit(s)
	}
	return FromStats(s)
}

func noSLO(s *engine.TaskStats) { s.M[metric.Latency].Slo, s.M[metric.Latency].Violations = 0, 0 }

// many gives the task 100 latency samples of 10 us, none over its SLO.
func many(s *engine.TaskStats) {
	l := &s.M[metric.Latency]
	*l = engine.MetricStats{Count: 100, Sum: 1000000, Min: 10000, Max: 10000, Slo: l.Slo}
	l.Hist[metric.Bucket(10000)] = 100
}

func TestJudge(t *testing.T) {
	violated := judgeCase(nil)
	violated.Metrics["latency"].ViolationCauses = &Violations{Total: 1, Analysed: 1, Causes: []*ViolationCause{
		{Cause: "interference", Culprit: "hog/99 (FIFO 90)", Count: 1, Percent: 100,
			Example: &ViolationExample{ValueNs: 30000, Verdict: "interference by a higher priority: hog/99 (FIFO 90) ran"}}}}
	inversion := judgeCase(func(s *engine.TaskStats) { noSLO(s); many(s); s.Hygiene[0] = 0 })
	inversion.Hygiene["futex_waits_without_pi"] = 3 // from the traces (internal/explain)
	inversion.Metrics["latency"].Cause = causePriorityInversion
	// An inversion the analysis found under another dominant cause counts.
	beside := judgeCase(func(s *engine.TaskStats) { noSLO(s); many(s); s.Hygiene[0] = 0 })
	beside.Hygiene["futex_waits_without_pi"] = 1
	beside.Metrics["latency"].Cause = "interference"
	beside.Metrics["latency"].Analysis = Decoded{"priority_inversion": map[string]any{"inverted": true, "blocked_ns": 5000.0}}
	for _, c := range []struct {
		name           string
		task           *Task
		health         Health
		reason, headln string
	}{
		{"SLO violated", violated, HealthFail, "latency 1 of 4 over its 20.0 us SLO (25.0%)",
			"worst latency 30.0 us against its 20.0 us SLO"},
		{"SLOs kept decide, whatever the hygiene", judgeCase(func(s *engine.TaskStats) { s.M[metric.Latency].Violations = 0 }),
			HealthOK, "every SLO kept", "worst latency 30.0 us against its 20.0 us SLO"},
		{"no SLO, a loop sleeping relative", judgeCase(noSLO), HealthWarn, "2 relative timer sleeps (the period drifts)",
			"worst latency 30.0 us in 4"},
		{"no SLO, too few events", judgeCase(func(s *engine.TaskStats) { noSLO(s); s.Hygiene[0] = 0 }), HealthUnknown,
			"too few events to judge (4 samples)", "worst latency 30.0 us in 4"},
		{"nothing measured", Placeholder(1, 77), HealthUnknown, "no samples", "no samples"},
		{"overruns fail a periodic task", judgeCase(func(s *engine.TaskStats) {
			noSLO(s)
			s.Overruns = 1999
			it := &s.M[metric.Iteration]
			it.Count, it.Sum, it.Min, it.Max = 1999, 1999*1520000, 1500000, 1600000
		}), HealthFail, "missed its period 1999 times in 1999 iterations", "worst latency 30.0 us in 4"},
		{"more overruns than iterations: unknown", judgeCase(func(s *engine.TaskStats) {
			noSLO(s)
			s.Overruns = 43272049
			s.M[metric.Iteration].Count = 4166
		}), HealthUnknown, "43272049 overruns counted in 4166 iterations: its period is not credible", "worst latency 30.0 us in 4"},
		{"a cycle beyond the period without an overrun warns", judgeCase(func(s *engine.TaskStats) {
			noSLO(s)
			many(s)
			s.Hygiene[0] = 0
			c := &s.M[metric.Cycle]
			c.Count, c.Sum, c.Min, c.Max = 100, 100*500000, 400000, 2600000
		}), HealthWarn, "cycle 2600.0 us beyond its period, no overrun counted", "worst cycle 2600.0 us, 1.30 of its period"},
		{"a periodic task without finding", judgeCase(func(s *engine.TaskStats) {
			noSLO(s)
			many(s)
			s.Hygiene[0] = 0
			c := &s.M[metric.Cycle]
			c.Count, c.Sum, c.Min, c.Max = 100, 100*500000, 400000, 600000
		}), HealthOK, "kept its period in 100 iterations", "worst cycle 600.0 us, 0.30 of its period"},
		{"an aperiodic task without finding", judgeCase(func(s *engine.TaskStats) {
			noSLO(s)
			many(s)
			s.NominalPeriod, s.Hygiene[0] = 0, 0
		}), HealthOK, "no finding in 10 wakeups (no SLO, no period)", "worst latency 10.0 us in 100"},
		{"a mutex without PI and an inversion seen", inversion, HealthWarn,
			"a mutex without priority inheritance, and a priority inversion seen", "worst latency 10.0 us in 100"},
		{"an inversion beside another cause", beside, HealthWarn,
			"a mutex without priority inheritance, and a priority inversion seen", "worst latency 10.0 us in 100"},
	} {
		Judge(c.task)
		if c.task.Health != c.health || c.task.HealthReason != c.reason || c.task.Headline != c.headln {
			t.Errorf("%s: got %s %q %q, want %s %q %q", c.name, c.task.Health, c.task.HealthReason, c.task.Headline,
				c.health, c.reason, c.headln)
		}
	}
	if f := violated.Findings; len(f) != 2 || f[0].Cause != "interference" || f[0].Count != 1 || f[0].CostNs != 30000 ||
		f[1].Cause != CauseHygiene {
		t.Errorf("findings of the violated task: %+v", f)
	}
	var buf bytes.Buffer
	WriteHeadlines(&buf, []*Task{violated})
	want := "rtscope watch: 1 task(s), the worst first\n  FAIL    control/1234         FIFO 80       period 2000.0 us   " +
		"latency 1 of 4 over its 20.0 us SLO (25.0%); worst latency 30.0 us against its 20.0 us SLO\n"
	if buf.String() != want {
		t.Errorf("headline text:\n%q\nwant:\n%q", buf.String(), want)
	}
}

// TestHeadlinesShort: the failed come first, and a thousand tasks make a
// short headline.
func TestHeadlinesShort(t *testing.T) {
	var tasks []*Task
	for i := 0; i < 1000; i++ {
		st := sampleStats()
		st.Tid = uint32(2000 + i)
		st.M[metric.Latency].Violations = 0
		st.M[metric.Latency].Max = 15000
		tasks = append(tasks, FromStats(st))
	}
	bad := FromStats(sampleStats())
	tasks = append(tasks, bad)
	for _, tk := range tasks {
		Judge(tk)
	}
	var buf bytes.Buffer
	WriteHeadlines(&buf, HeadlineOrder(tasks))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != headlinesShown+2 || !strings.Contains(lines[1], "FAIL") ||
		lines[len(lines)-1] != "  and 981 more: 981 ok (--verbose prints every task; JSON has every judgement)" {
		t.Errorf("headline of 1001 tasks:\n%s", buf.String())
	}
}

// TestSetWorstRefusesAStaleWindow: a window cut for an earlier maximum is
// not shown as the worst case (its notice was lost), and says so.
func TestSetWorstRefusesAStaleWindow(t *testing.T) {
	m := FromStats(sampleStats()).Metrics["latency"] // max 30000
	if m.SetWorst(&trace.Trace{Value: 9000}) || m.Worst != nil || !strings.Contains(m.WorstNote, "earlier maximum (9.0 us)") {
		t.Errorf("stale window taken: worst %v, note %q", m.Worst, m.WorstNote)
	}
	if !m.SetWorst(&trace.Trace{Value: 30000}) || m.Worst == nil || m.WorstNote != "" {
		t.Errorf("the maximum's window refused: note %q", m.WorstNote)
	}
}

// The monitor's share (issue 15, item 6): windows holding rtscope's own
// threads are counted apart, with their time, and printed when there are any.
func TestMonitorShare(t *testing.T) {
	m := &Monitor{PID: 42}
	var buf bytes.Buffer
	WriteMonitor(&buf, m)
	if buf.Len() != 0 {
		t.Errorf("printed with no monitor time: %q", buf.String())
	}
	m.AddWorst(Explanation{Cause: "interference"})
	m.AddWorst(Explanation{Cause: "monitor", ByMonitor: true, MonitorNs: 1_500_000})
	m.AddViolation(Explanation{Cause: "exit-from-idle", MonitorNs: 2_000})
	m.AddViolation(Explanation{Cause: "monitor", ByMonitor: true, MonitorNs: 30_000})
	m.AddViolation(Explanation{Cause: "hardirq"})
	want := Monitor{PID: 42, WorstCases: 2, WorstCasesWithMonitor: 1, WorstCaseMonitorNs: 1_500_000, WorstCasesMonitor: 1,
		Violations: 3, ViolationsWithMonitor: 2, ViolationMonitorNs: 32_000, ViolationsMonitor: 1}
	if *m != want {
		t.Errorf("monitor %+v, want %+v", *m, want)
	}
	WriteMonitor(&buf, m)
	if got := buf.String(); !strings.Contains(got, "ran 1500.0 us inside 1 of 2 worst cases (1 mostly its own) and 32.0 us inside 2 of 3 explained SLO violations (1 mostly its own)") {
		t.Errorf("summary %q", got)
	}
	var v Violations
	v.Add(Explanation{Cause: "monitor", ByMonitor: true, Culprit: "rtscope itself (the monitor)", MonitorNs: 30_000}, 40_000, &trace.Trace{})
	v.Add(Explanation{Cause: "monitor", ByMonitor: true, Culprit: "rtscope itself (the monitor)", MonitorNs: 20_000}, 35_000, &trace.Trace{})
	if c := v.Causes; len(c) != 1 || c[0].Count != 2 || c[0].MonitorNs != 50_000 {
		t.Errorf("violation causes %+v", c)
	}
}

// A sleep names the kernel function that told its reason; a faults event
// says how many faults the task's run took.
func TestDescribeFaultsAndBlockedIn(t *testing.T) {
	sl := trace.Event{Type: trace.EventSleep, TID: 7, Comm: "writer", State: "S", Reason: trace.ReasonPipeWrite, BlockedIn: "anon_pipe_write"}
	if got, want := Describe(sl), "sleep    writer/7 S: pipe write (pipe full) in anon_pipe_write"; got != want {
		t.Errorf("sleep: %q, want %q", got, want)
	}
	f := trace.Event{Type: trace.EventFaults, TID: 7, Comm: "writer", MinorFaults: 256, MajorFaults: 1}
	if got, want := Describe(f), "faults   writer/7: 256 minor, 1 major page faults in its run"; got != want {
		t.Errorf("faults: %q, want %q", got, want)
	}
}

// A headline names the identity a task held longest, and its last one when
// it differs (cyclictest runs FIFO 80 and exits as OTHER).
func TestHeadlineMainSched(t *testing.T) {
	tk := &Task{TID: 7, Comm: "cyclictest", Sched: "OTHER nice 0", Exited: true,
		SchedTimes: []SchedTime{{Sched: "OTHER nice 0", Ns: 2e6, Last: true}, {Sched: "FIFO 80", Ns: 3e9}},
		Hygiene:    map[string]uint64{}, Metrics: map[string]*Metric{}}
	Judge(tk)
	var b strings.Builder
	WriteHeadlines(&b, []*Task{tk})
	if !strings.Contains(b.String(), "FIFO 80") || !strings.Contains(b.String(), "OTHER nice 0 at exit") {
		t.Errorf("headline:\n%s", b.String())
	}
	tk.SchedTimes = nil
	b.Reset()
	WriteHeadlines(&b, []*Task{tk})
	if strings.Contains(b.String(), "at exit") || !strings.Contains(b.String(), "OTHER nice 0") {
		t.Errorf("headline without times:\n%s", b.String())
	}
}

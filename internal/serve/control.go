package serve

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/target"
)

// Control changes the running agent's targets and SLOs (rtscope ctl,
// SIGHUP). Collected state is never dropped: a removed target's tasks stop
// being tracked as if they exited (engine.Untrack), their counts staying in
// their series' totals, so no counter goes back, and a task tracked again
// is a new task with its own counters (Prometheus counters aggregated by
// name only grow). Changed SLO bounds, the defaults
// included, reach the tasks tracked already (engine.ReapplySLO), whose
// counts and violations so far are kept.
//
// Concurrency: its methods are safe for concurrent use (the HTTP API's
// goroutines, the SIGHUP handler, the /metrics scrape). Changes are
// serialised by mu, and every engine change runs on the watch session's
// goroutine through watch.Agent.Control, the one goroutine that uses the
// engine; a change waits for it to be made, or fails once the session has
// ended. State and Targets never wait for the session or for a change:
// they read the view, which the session publishes (Observe at each tick,
// and each change once made) under vmu, a lock held only to copy. Reading
// every task's statistics for GET /v1/targets on the session goroutine
// held the answer behind the session's work: 0.23-1.6 s while a ctl add
// ran (bench/results/2026-11-28-soak.md).
type Control struct {
	mu      sync.Mutex
	run     chan func(*engine.Engine)
	done    chan struct{} // closed when the session ends
	flags   Config        // the flags' targets and SLOs, kept across reloads
	path    string        // --config ("": none)
	targets []TargetConfig
	slos    []string
	def     [metric.Count]uint64    // default bounds now
	next    uint32                  // index of the next target spec
	index   map[TargetConfig]uint32 // each target's index (rts_target.index)

	vmu      sync.Mutex
	view     State         // what State answers; its slices are replaced, never modified
	seen     chan struct{} // closed once the session published the tasks tracked
	seenOnce sync.Once
}

// NewControl returns the control of an agent started with the targets and
// SLOs of its flags and of the configuration file path ("" for none), file
// its parsed content (nil for none).
func NewControl(flags Config, path string, file *Config) *Control {
	c := &Control{run: make(chan func(*engine.Engine)), done: make(chan struct{}), seen: make(chan struct{}),
		flags: flags, path: path}
	c.targets, c.slos = combine(flags, file)
	c.view = State{Targets: slices.Clone(c.targets), SLO: slices.Clone(c.slos), Tracked: []Tracked{}}
	c.def = buildSLO(c.slos).Default
	c.next = uint32(len(c.targets))
	// watch.Register numbers the targets of Spec by kind: tids, pids,
	// names, cgroups.
	c.index = map[TargetConfig]uint32{}
	spec := c.Spec()
	i := uint32(0)
	for _, v := range spec.TIDs {
		c.index[TargetConfig{TID: v}], i = i, i+1
	}
	for _, v := range spec.PIDs {
		c.index[TargetConfig{PID: v}], i = i, i+1
	}
	for _, v := range spec.Comms {
		c.index[TargetConfig{Comm: v}], i = i, i+1
	}
	for _, v := range spec.Cgroups {
		c.index[TargetConfig{Cgroup: v}], i = i, i+1
	}
	return c
}

// combine returns the targets and SLOs of the flags then the file, each
// once.
func combine(flags Config, file *Config) ([]TargetConfig, []string) {
	ts := slices.Clone(flags.Targets)
	ss := slices.Clone(flags.SLO)
	if file != nil {
		for _, t := range file.Targets {
			if !slices.Contains(ts, t) {
				ts = append(ts, t)
			}
		}
		for _, s := range file.SLO {
			if !slices.Contains(ss, s) {
				ss = append(ss, s)
			}
		}
	}
	return ts, ss
}

// Spec returns the targets at start, in the order of their indexes.
func (c *Control) Spec() target.Spec {
	var s target.Spec
	for _, t := range c.targets {
		switch {
		case t.TID != 0:
			s.TIDs = append(s.TIDs, t.TID)
		case t.PID != 0:
			s.PIDs = append(s.PIDs, t.PID)
		case t.Cgroup != "":
			s.Cgroups = append(s.Cgroups, t.Cgroup)
		default:
			s.Comms = append(s.Comms, t.Comm)
		}
	}
	return s
}

// SLO returns the bounds at start.
func (c *Control) SLO() slo.Set { return buildSLO(c.slos) }

// buildSLO folds checked specs (ParseConfig, checkSLO) into a set.
func buildSLO(specs []string) slo.Set {
	var bs []slo.Bound
	for _, s := range specs {
		b, _ := slo.Parse(s) // checked when given
		bs = append(bs, b)
	}
	return slo.Build(bs)
}

// Hook is the channel for watch.Agent.Control.
func (c *Control) Hook() <-chan func(*engine.Engine) { return c.run }

// Ended tells the control that the session has ended: changes fail from
// now on. Called once.
func (c *Control) Ended() { close(c.done) }

// State is what the agent watches: GET /v1/targets.
type State struct {
	Targets []TargetConfig `json:"targets"`
	SLO     []string       `json:"slo"`
	// SLONote says why changed SLOs reach only the tasks tracked later
	// (a kernel without bpf_for_each_map_elem); empty when they reach all.
	SLONote string    `json:"slo_note,omitempty"`
	Tracked []Tracked `json:"tracked"`
}

// Tracked is one task being tracked.
type Tracked struct {
	TID  uint32 `json:"tid"`
	PID  uint32 `json:"pid"`
	Comm string `json:"comm"`
}

// String names a target as its flag does: comm NAME, pid N, tid N.
func (t TargetConfig) String() string {
	switch {
	case t.TID != 0:
		return "tid " + strconv.Itoa(t.TID)
	case t.PID != 0:
		return "pid " + strconv.Itoa(t.PID)
	case t.Cgroup != "":
		return "cgroup " + t.Cgroup
	}
	return "comm " + t.Comm
}

// Check says why t is not a target: exactly one of its fields, in range
// (whether a cgroup exists is checked when it is watched).
func (t TargetConfig) Check() error {
	n := 0
	for _, set := range []bool{t.Comm != "", t.PID != 0, t.TID != 0, t.Cgroup != ""} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return errors.New("a target has exactly one of comm, pid, tid or cgroup")
	case len(t.Comm) > target.CommLen:
		return fmt.Errorf("comm %q has more than %d characters (the kernel's limit)", t.Comm, target.CommLen)
	case t.PID < 0 || t.TID < 0:
		return errors.New("a pid or tid is a positive number")
	}
	return nil
}

// State returns the targets and SLOs as of the last change made, and the
// tasks tracked as of the session's last tick (at most a tick old) or
// change, whichever came last. It waits only for the session's first
// tick after its start, and fails once the session has ended.
func (c *Control) State() (*State, error) {
	select {
	case <-c.seen:
	case <-c.done:
		return nil, errEnded
	}
	select {
	case <-c.done:
		return nil, errEnded
	default:
	}
	c.vmu.Lock()
	st := c.view // its slices are never modified: sharing them is safe
	c.vmu.Unlock()
	if st.Targets == nil {
		st.Targets = []TargetConfig{}
	}
	if st.SLO == nil {
		st.SLO = []string{}
	}
	return &st, nil
}

// Targets returns how many targets are watched now (as of the last change
// made: a scrape does not wait for one being made).
func (c *Control) Targets() int {
	c.vmu.Lock()
	defer c.vmu.Unlock()
	return len(c.view.Targets)
}

// Observe publishes the tasks tracked now for State, from the statistics
// of the live tasks the session read anyway (watch.Observer.Tick): no
// read of its own. Called on the session's goroutine.
func (c *Control) Observe(e *engine.Engine, live []*engine.TaskStats) {
	tracked := []Tracked{}
	for _, s := range live {
		if s.Exited == 0 {
			tracked = append(tracked, Tracked{TID: s.Tid, PID: s.Pid, Comm: engine.CommString(s.Comm)})
		}
	}
	note := ""
	if e.Features.SLOReapply != nil {
		note = e.Features.SLOReapply.Error()
	}
	c.vmu.Lock()
	c.view.Tracked, c.view.SLONote = tracked, note
	c.vmu.Unlock()
	c.seenOnce.Do(func() { close(c.seen) })
}

// publish makes a change made visible to State: its targets and SLOs, and,
// when targets changed, the tasks tracked now (read on the session's
// goroutine, as the change itself: a removed target's tasks are gone from
// the answer to its own request; if that read fails, the next tick
// publishes them). Called on the session's goroutine.
func (c *Control) publish(e *engine.Engine, targets []TargetConfig, slos []string, retargeted bool) {
	c.vmu.Lock()
	c.view.Targets, c.view.SLO = slices.Clone(targets), slices.Clone(slos)
	c.vmu.Unlock()
	if !retargeted {
		return
	}
	if all, err := e.AllStats(); err == nil {
		c.Observe(e, all)
	}
}

// AddTarget starts watching t: the tasks it names now and later.
func (c *Control) AddTarget(t TargetConfig) error {
	if err := t.Check(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Contains(c.targets, t) {
		return fmt.Errorf("target %s is already watched", t)
	}
	return c.apply(append(slices.Clone(c.targets), t), c.slos)
}

// RemoveTarget stops watching t: its tasks tracked now stay tracked until
// they exit (their counters are kept); later ones are not tracked.
func (c *Control) RemoveTarget(t TargetConfig) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.targets, t)
	if i < 0 {
		return fmt.Errorf("target %s is not watched", t)
	}
	return c.apply(slices.Delete(slices.Clone(c.targets), i, i+1), c.slos)
}

// AddSLO sets a bound [ID:]METRIC=TIME (without ID: of every task), for
// the tasks tracked now and later; it replaces the bound of the same ID
// and metric, if any.
func (c *Control) AddSLO(spec string) error {
	b, err := slo.Parse(spec)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Contains(c.slos, spec) {
		return fmt.Errorf("SLO %q is already set", spec)
	}
	slos := slices.Clone(c.slos)
	i := slices.IndexFunc(slos, func(s string) bool {
		o, _ := slo.Parse(s) // checked when given
		return o.ID == b.ID && o.Metric == b.Metric
	})
	if i >= 0 {
		slos[i] = spec
	} else {
		slos = append(slos, spec)
	}
	return c.apply(c.targets, slos)
}

// RemoveSLO removes a bound given by AddSLO, the flags or the file.
func (c *Control) RemoveSLO(spec string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.slos, spec)
	if i < 0 {
		return fmt.Errorf("SLO %q is not set", spec)
	}
	return c.apply(c.targets, slices.Delete(slices.Clone(c.slos), i, i+1))
}

// Reload rereads the configuration file: the targets and SLOs become
// those of the flags and the file; changes made by the API since are
// dropped. A file that does not parse changes nothing.
func (c *Control) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var file *Config
	if c.path != "" {
		f, err := LoadConfig(c.path)
		if err != nil {
			return err
		}
		file = f
	}
	ts, ss := combine(c.flags, file)
	return c.apply(ts, ss)
}

// apply makes targets and slos the watched ones, on the session's
// goroutine; on a failure nothing changes. Called with mu held.
func (c *Control) apply(targets []TargetConfig, slos []string) error {
	for _, s := range slos {
		if _, err := slo.Parse(s); err != nil {
			return err
		}
	}
	ch := &change{
		oldSLO: buildSLO(c.slos), newSLO: buildSLO(slos),
		added: missing(targets, c.targets), removed: missing(c.targets, targets),
		next: c.next, index: maps.Clone(c.index),
	}
	retargeted := len(ch.added) > 0 || len(ch.removed) > 0
	err := c.do(func(e *engine.Engine) error {
		if err := ch.make(e); err != nil {
			return err
		}
		c.publish(e, targets, slos, retargeted)
		return nil
	})
	if err != nil {
		return err
	}
	c.targets, c.slos, c.next, c.index = targets, slos, ch.next, ch.index
	return nil
}

// missing returns the targets of ts that are not in of.
func missing(ts, of []TargetConfig) []TargetConfig {
	var out []TargetConfig
	for _, t := range ts {
		if !slices.Contains(of, t) {
			out = append(out, t)
		}
	}
	return out
}

// change is one apply's change of the engine: the SLO bounds before and
// after, the targets added and removed, and the target indexes it gives
// (kept by Control only when the whole change is made).
type change struct {
	oldSLO, newSLO slo.Set
	added, removed []TargetConfig
	next           uint32
	index          map[TargetConfig]uint32
}

// make changes the engine, on the session's goroutine. Bounds first: the
// tasks tracked by the targets added get them.
func (ch *change) make(e *engine.Engine) error {
	if err := ch.setBounds(e); err != nil {
		return err
	}
	if err := ch.addTargets(e); err != nil {
		return err
	}
	if err := ch.removeTargets(e); err != nil {
		return err
	}
	if len(ch.added) > 0 {
		if err := e.Scan(); err != nil { // the tasks that exist already
			return err
		}
	}
	if ch.newSLO.Default != ch.oldSLO.Default || !maps.Equal(ch.newSLO.ByID, ch.oldSLO.ByID) {
		// The tasks tracked already: without the kernel's support
		// (State.SLONote) only tasks tracked later get the bounds.
		if _, err := e.ReapplySLO(); err != nil && err != e.Features.SLOReapply {
			return err
		}
	}
	return nil
}

// setBounds sets the default and per-id SLO bounds that changed, and
// forgets the per-id ones dropped; on a failure the old bounds are back.
func (ch *change) setBounds(e *engine.Engine) error {
	nset, oset := ch.newSLO, ch.oldSLO
	if nset.Default != oset.Default {
		if err := e.SetSLODefault(nset.Default); err != nil {
			return err
		}
	}
	for id, b := range nset.ByID {
		if ob, ok := oset.ByID[id]; !ok || ob != b {
			if err := e.SetSLO(id, b); err != nil {
				restoreSLO(e, oset, nset)
				return err
			}
		}
	}
	for id := range oset.ByID {
		if _, ok := nset.ByID[id]; !ok {
			e.ForgetSLO(id)
		}
	}
	return nil
}

// addTargets makes the engine want the targets added, each under a new
// index; on a failure those added are forgotten and the old bounds are back.
func (ch *change) addTargets(e *engine.Engine) error {
	for i, t := range ch.added {
		if err := want(e, t, ch.next); err != nil {
			for _, u := range ch.added[:i] {
				forget(e, u)
			}
			restoreSLO(e, ch.oldSLO, ch.newSLO)
			return fmt.Errorf("target %s: %w", t, err)
		}
		ch.index[t] = ch.next
		ch.next++
	}
	return nil
}

// removeTargets forgets the targets removed and stops tracking their tasks.
func (ch *change) removeTargets(e *engine.Engine) error {
	for _, t := range ch.removed {
		forget(e, t)
	}
	for _, t := range ch.removed {
		// After every forget: a task another removed target also
		// selected is not moved to it.
		if i, ok := ch.index[t]; ok {
			if err := e.Untrack(i); err != nil {
				return fmt.Errorf("target %s: %w", t, err)
			}
			delete(ch.index, t)
		}
	}
	return nil
}

// restoreSLO puts back the bounds of old after a failed change to cur.
func restoreSLO(e *engine.Engine, old, cur slo.Set) {
	if old.Default != cur.Default {
		_ = e.SetSLODefault(old.Default) // it fitted before
	}
	for id := range cur.ByID {
		if _, ok := old.ByID[id]; !ok {
			e.ForgetSLO(id)
		}
	}
	for id, b := range old.ByID {
		_ = e.SetSLO(id, b) // they fitted before
	}
}

func want(e *engine.Engine, t TargetConfig, idx uint32) error {
	switch {
	case t.TID != 0:
		return e.WantTID(uint32(t.TID), idx, 0)
	case t.PID != 0:
		return e.WantTGID(uint32(t.PID), idx)
	case t.Cgroup != "":
		_, id, err := target.Cgroup(t.Cgroup)
		if err != nil {
			return err
		}
		return e.WantCgroup(id, idx)
	}
	return e.WantComm(t.Comm, idx)
}

func forget(e *engine.Engine, t TargetConfig) {
	switch {
	case t.TID != 0:
		e.ForgetTID(uint32(t.TID))
	case t.PID != 0:
		e.ForgetTGID(uint32(t.PID))
	case t.Cgroup != "":
		// A cgroup removed since has an id no cgroup gets again: its
		// entry, left, matches nothing.
		if _, id, err := target.Cgroup(t.Cgroup); err == nil {
			e.ForgetCgroup(id)
		}
	default:
		e.ForgetComm(t.Comm)
	}
}

// errEnded: the session is over, nothing can change.
var errEnded = errors.New("the agent is stopping")

// do runs f on the session's goroutine and returns its error.
func (c *Control) do(f func(*engine.Engine) error) error {
	res := make(chan error, 1)
	select {
	case c.run <- func(e *engine.Engine) { res <- f(e) }:
	case <-c.done:
		return errEnded
	}
	return <-res
}

package watch

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/sched"
)

// housekeepEvery: how often the automatic housekeeping choice follows the
// watched tasks (their affinities, new tasks).
const housekeepEvery = time.Second

// monitorRefresh bounds how often rtscope's own thread list is re-read: the
// Go runtime starts its threads early and rarely adds one later.
const monitorRefresh = 500 * time.Millisecond

// housekeeper places rtscope's own threads (the monitor) on their CPUs,
// given (-H) or chosen from the watched tasks and followed, and knows
// which threads are its own. Session goroutine only.
type housekeeper struct {
	cpus []int     // -H (empty: none, or automatic)
	auto bool      // choose the CPUs (without -H)
	log  io.Writer // the moves are said there
	// house is where the threads run (nil: not placed).
	house *report.Housekeeping
	// monitor is rtscope's own share of the windows explained; its
	// threads are re-read at most every monitorRefresh.
	monitor     *report.Monitor
	monitorTIDs []uint32
	monitorRead time.Time
}

func newHousekeeper(cpus []int, auto bool, log io.Writer) *housekeeper {
	return &housekeeper{cpus: cpus, auto: auto && len(cpus) == 0, log: log, monitor: &report.Monitor{PID: uint32(os.Getpid())}}
}

// place pins rtscope's threads to the -H CPUs, or makes the first
// automatic choice. Called once the launched command is forked: it keeps
// its own affinity.
func (h *housekeeper) place(e *engine.Engine) error {
	if len(h.cpus) > 0 {
		if err := cpuset.PinProcess(cpuset.Mask(h.cpus), nil); err != nil {
			return err
		}
		h.house = &report.Housekeeping{CPUs: cpuset.FormatList(h.cpus), Reason: "-H"}
	}
	if h.auto {
		h.follow(e)
	}
	return nil
}

// follow chooses rtscope's CPUs from the watched tasks (live ones) and
// moves its threads there when the choice changed.
func (h *housekeeper) follow(e *engine.Engine) {
	online, err := cpuset.Online()
	if err != nil {
		return
	}
	all, err := e.Placements()
	if err != nil {
		return
	}
	cpus, reason, shared := cpuset.Housekeeping(ownCandidates(online, setApart()), watchedPlaces(online, all))
	if cpus == nil {
		return // nothing to keep off yet
	}
	list := cpuset.FormatList(cpus)
	if h.house != nil && h.house.CPUs == list {
		h.house.Reason, h.house.Shared = reason, shared
		return
	}
	if h.house != nil && shared && h.house.Shared {
		return // still no CPU of its own: moving as the tasks migrate would gain nothing
	}
	if err := cpuset.PinProcess(cpuset.Mask(cpus), nil); err != nil {
		fmt.Fprintf(h.log, "rtscope watch: cannot move to CPUs %s: %v\n", list, err)
		return
	}
	if h.house == nil {
		h.house = &report.Housekeeping{Automatic: true}
	} else {
		h.house.Changes++
	}
	h.house.CPUs, h.house.Reason, h.house.Shared = list, reason, shared
	fmt.Fprintf(h.log, "rtscope watch: own threads on CPU %s: %s (-H overrides)\n", list, reason)
}

// sysSetApart are the kernel's lists of the CPUs set apart at boot for
// real-time work (a variable for tests).
var sysSetApart = []string{"/sys/devices/system/cpu/isolated", "/sys/devices/system/cpu/nohz_full"}

// setApart reads the CPUs set apart at boot (isolcpus=, nohz_full=).
func setApart() []int {
	var out []int
	for _, f := range sysSetApart {
		if b, err := os.ReadFile(f); err == nil {
			if l, err := cpuset.ParseList(string(b)); err == nil {
				out = append(out, l...)
			}
		}
	}
	return out
}

// ownCandidates are the CPUs rtscope's own threads may be given: the
// online ones not set apart for real-time work, unless that leaves none.
// A kernel thread is watched before it is bound to its CPU: osnoise/1
// first ran where kthreadd may (CPU 0, the isolated guest's only
// housekeeping CPU), so rtscope took isolated CPU 1 for itself, and its
// threads made 59.4 of osnoise's 65.5 ms of thread noise there.
func ownCandidates(online, apart []int) []int {
	var out []int
	for _, c := range online {
		if !slices.Contains(apart, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return online
	}
	return out
}

// watchedPlaces are the live tasks' policies and CPUs, for the choice.
func watchedPlaces(online []int, all []engine.Placement) []cpuset.Watched {
	var ws []cpuset.Watched
	for _, st := range all {
		if st.Exited {
			continue
		}
		w := cpuset.Watched{RT: sched.IsRT(st.Policy), LastCPU: st.LastCPU, CPUs: online}
		if st.NrCpusAllowed <= 64 {
			w.CPUs = nil
			for c := 0; c < 64; c++ {
				if st.CpusMask&(1<<c) != 0 {
					w.CPUs = append(w.CPUs, c)
				}
			}
		}
		ws = append(ws, w)
	}
	return ws
}

// threads returns the threads of rtscope's own process (the monitor), for
// the analysis to name them as such (trace.Trace.Monitor).
func (h *housekeeper) threads() []uint32 {
	if h.monitorTIDs != nil && time.Since(h.monitorRead) < monitorRefresh {
		return h.monitorTIDs
	}
	h.monitorRead = time.Now()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return h.monitorTIDs
	}
	tids := make([]uint32, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.ParseUint(e.Name(), 10, 32); err == nil {
			tids = append(tids, uint32(tid))
		}
	}
	h.monitorTIDs = tids
	return tids
}

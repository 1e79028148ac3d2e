package cpuset

import (
	"fmt"
	"sort"
)

// Watched is what the housekeeping choice needs of one watched task.
type Watched struct {
	CPUs    []int // the CPUs it may run on (its affinity)
	RT      bool  // FIFO, RR or DEADLINE
	LastCPU int
}

// Housekeeping chooses the CPUs for rtscope's own threads so that they keep
// off the watched tasks' CPUs: the online CPUs that no watched real-time
// task may run on (with no real-time task watched, no watched task at
// all). When the watched tasks may run on every CPU, it takes the one the
// fewest of them last ran on (the lowest on a tie), and says so. nil: no
// task to keep off (nothing watched yet), no pinning. shared: the CPUs
// chosen may run watched tasks too.
func Housekeeping(online []int, watched []Watched) (cpus []int, reason string, shared bool) {
	var rt []Watched
	for _, w := range watched {
		if w.RT {
			rt = append(rt, w)
		}
	}
	kind := "real-time task"
	if len(rt) == 0 {
		rt, kind = watched, "task"
	}
	if len(rt) == 0 {
		return nil, "no task watched yet", false
	}
	busy := map[int]bool{}
	for _, w := range rt {
		for _, c := range w.CPUs {
			busy[c] = true
		}
	}
	for _, c := range online {
		if !busy[c] {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) > 0 {
		return cpus, fmt.Sprintf("the CPUs no watched %s may run on", kind), false
	}
	load := map[int]int{}
	for _, w := range rt {
		load[w.LastCPU]++
	}
	best := append([]int(nil), online...)
	sort.SliceStable(best, func(i, j int) bool { return load[best[i]] < load[best[j]] })
	return best[:1], fmt.Sprintf("every CPU may run a watched %s: CPU %d, where the fewest of them ran (%d of %d); "+
		"pin them, or give rtscope a CPU with -H", kind, best[0], load[best[0]], len(rt)), true
}

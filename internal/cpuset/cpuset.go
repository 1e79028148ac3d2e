// Package cpuset parses CPU lists ("0-3,5") and pins rtscope's own threads
// to housekeeping CPUs, away from the real-time CPUs it measures.
package cpuset

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxCPU bounds CPU numbers in lists (the kernel's NR_CPUS is at most 8192).
const maxCPU = 8192

// ParseList parses a list like "0-3,5,7-8" into sorted, distinct CPU numbers.
func ParseList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty CPU list")
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or range", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: %q is not a CPU range (low-high)", s, part)
			}
		}
		if b >= maxCPU {
			return nil, fmt.Errorf("CPU list %q: CPU %d is beyond %d", s, b, maxCPU-1)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

// FormatList prints sorted CPUs compactly ("0-3,5").
func FormatList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			fmt.Fprintf(&b, "%d", cpus[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		}
		i = j + 1
	}
	return b.String()
}

// Online returns the CPUs the kernel has online.
func Online() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("reading the online CPUs: %w", err)
	}
	return ParseList(string(b))
}

// Mask turns a list of CPUs into an affinity mask.
func Mask(cpus []int) *unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return &set
}

// PinProcess sets the affinity of every thread of this process to set,
// except the threads in except. Threads created later inherit it.
func PinProcess(set *unix.CPUSet, except map[int]bool) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("listing rtscope's threads: %v", err)
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || except[tid] {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("pinning rtscope thread %d: %v", tid, err)
		}
	}
	return nil
}

package timerlat

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// maxCPU bounds CPU numbers in lists (the kernel's NR_CPUS is at most 8192).
const maxCPU = 8192

// ParseCPUList parses a list like "0-3,5,7-8" into sorted, distinct CPU numbers.
func ParseCPUList(s string) ([]int, error) {
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

// FormatCPUList prints sorted CPUs compactly ("0-3,5").
func FormatCPUList(cpus []int) string {
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

// OnlineCPUs returns the CPUs the kernel has online.
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("reading the online CPUs: %w", err)
	}
	return ParseCPUList(string(b))
}

// checkOnline refuses CPUs that are not online, naming them.
func checkOnline(what string, cpus, online []int) error {
	on := map[int]bool{}
	for _, c := range online {
		on[c] = true
	}
	var bad []int
	for _, c := range cpus {
		if !on[c] {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: CPU %s not online (online: %s)", what, FormatCPUList(bad), FormatCPUList(online))
	}
	return nil
}

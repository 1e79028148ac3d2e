package timerlat

import (
	"fmt"

	"github.com/rtscope/rtscope/internal/cpuset"
)

// ParseCPUList parses a list like "0-3,5,7-8" (see cpuset.ParseList).
func ParseCPUList(s string) ([]int, error) { return cpuset.ParseList(s) }

// FormatCPUList prints sorted CPUs compactly ("0-3,5").
func FormatCPUList(cpus []int) string { return cpuset.FormatList(cpus) }

// OnlineCPUs returns the CPUs the kernel has online.
func OnlineCPUs() ([]int, error) { return cpuset.Online() }

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

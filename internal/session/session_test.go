package session

import (
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/cpuset"
)

// TestCPUOptions: -c and -H are parsed for every command here, and CPUs
// that are not online are refused naming them and the online ones.
func TestCPUOptions(t *testing.T) {
	cpus, err := ParseCPUs("-c", "5,0-2, 7-8,1")
	if err != nil || cpuset.FormatList(cpus) != "0-2,5,7-8" {
		t.Fatalf("ParseCPUs = %v, %v", cpus, err)
	}
	if _, err := ParseCPUs("-H", "a"); err == nil || !strings.HasPrefix(err.Error(), "-H: ") {
		t.Errorf("ParseCPUs(-H a): %v, want an error naming -H", err)
	}
	if err := CheckOnline("-c", []int{0, 3}, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "CPU 3 not online") {
		t.Errorf("CheckOnline: %v", err)
	}
	if err := CheckOnline("-H", []int{4096, 5, 1}, []int{0, 1}); err == nil || err.Error() != "-H: CPU 5,4096 not online (online: 0-1)" {
		t.Errorf("CheckOnline(-H 4096,5,1): %v", err)
	}
	if err := CheckOnline("-H", nil, []int{0, 1}); err != nil {
		t.Errorf("CheckOnline of no CPUs: %v", err)
	}
}

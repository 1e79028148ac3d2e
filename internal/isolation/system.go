package isolation

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/cpuset"
)

// sysCPU is where the kernel lists its CPU sets (a variable for tests).
var sysCPU = "/sys/devices/system/cpu"

// cpuFile reads one of sysCPU's lists ("isolated", "nohz_full", "online"):
// none when absent or empty.
func cpuFile(name string) []int {
	b, err := os.ReadFile(filepath.Join(sysCPU, name))
	if err != nil {
		return nil
	}
	l, err := cpuset.ParseList(string(b))
	if err != nil {
		return nil
	}
	return l
}

// DefaultCPUs are the CPUs to watch without -c: the isolated ones and
// the nohz_full ones.
func DefaultCPUs() ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, c := range append(cpuFile("isolated"), cpuFile("nohz_full")...) {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: none is isolated (isolcpus=) or nohz_full here; name the CPUs to watch with -c, as in -c 1", errNoCPUs)
	}
	sort.Ints(out)
	return out, nil
}

// CheckCPUs refuses CPUs that are not online.
func CheckCPUs(cpus []int) error {
	online := map[int]bool{}
	for _, c := range cpuFile("online") {
		online[c] = true
	}
	for _, c := range cpus {
		if len(online) > 0 && !online[c] {
			return fmt.Errorf("CPU %d is not online (online: %s)", c, listString(cpuFile("online")))
		}
	}
	return nil
}

// describeSystem records the CPU sets of the machine in s.
func describeSystem(s *Snapshot) {
	s.Online = cpuFile("online")
	s.Isolated = cpuFile("isolated")
	s.NohzFull = cpuFile("nohz_full")
}

// irqInfo is irq's action names and affinity lists (/proc/irq/N).
func irqInfo(irq int) (name, affinity, effective string) {
	dir := filepath.Join("/proc/irq", strconv.Itoa(irq))
	var names []string
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	return strings.Join(names, ","), read("smp_affinity_list"), read("effective_affinity_list")
}

// userHz is the unit of /proc/stat's times (USER_HZ, 100 on every
// architecture Linux exports to user space).
const userHz = 100

// readSteal reads each CPU's steal time in ns from /proc/stat.
func readSteal() (map[int]uint64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("reading steal time: %w", err)
	}
	out := map[int]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		cpu, err1 := strconv.Atoi(f[0][3:])
		steal, err2 := strconv.ParseUint(f[8], 10, 64)
		if err1 == nil && err2 == nil {
			out[cpu] = steal * (1e9 / userHz)
		}
	}
	return out, nil
}

// stealDiff is the steal of cpus between two readings.
func stealDiff(cpus []int, before, after map[int]uint64) []StealRow {
	var out []StealRow
	for _, c := range cpus {
		if a, b := after[c], before[c]; a > b {
			out = append(out, StealRow{CPU: c, Ns: a - b})
		}
	}
	return out
}

// listString prints CPUs as a kernel list ("0,2-3").
func listString(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// cpusetParse parses a kernel CPU list.
func cpusetParse(s string) ([]int, error) { return cpuset.ParseList(s) }

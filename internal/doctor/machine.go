package doctor

import (
	"encoding/binary"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/preempt"
)

// machine holds the facts several checks share, read once.
type machine struct {
	fsys     fs.FS
	release  string            // uname -r
	version  string            // uname -v
	cmdline  map[string]string // boot parameters (last value wins; flags map to "")
	online   []int
	isolated []int // isolcpus (domain) or nohz_full CPUs
	nohz     []int
	kernel   *preempt.Kernel // what the preemption model is decided from
	irqs     []irq
}

type irq struct {
	num       string
	cpus      []int // effective affinity (else the requested one)
	effective bool
	name      string // the first action's name in /proc/interrupts ("" unknown)
}

func (m *machine) read(name string) (string, bool) {
	b, err := fs.ReadFile(m.fsys, name)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func (m *machine) list(name string) []int {
	s, ok := m.read(name)
	if !ok || s == "" || s == "(null)" {
		return nil
	}
	l, err := cpuset.ParseList(s)
	if err != nil {
		return nil
	}
	return l
}

func load(fsys fs.FS) *machine {
	m := &machine{fsys: fsys, kernel: preempt.Read(fsys)}
	m.release, m.version, m.cmdline = m.kernel.Release, m.kernel.Version, m.kernel.Cmdline
	m.online = m.list("sys/devices/system/cpu/online")
	m.nohz = m.list("sys/devices/system/cpu/nohz_full")
	m.isolated = union(m.list("sys/devices/system/cpu/isolated"), m.nohz)
	if v, ok := m.cmdline["isolcpus"]; ok && len(m.isolated) == 0 {
		m.isolated = cmdlineCPUs(v)
	}
	m.loadIRQs()
	return m
}

// cmdlineCPUs parses isolcpus=[flag,...,]LIST (flags: nohz, domain, managed_irq).
func cmdlineCPUs(v string) []int {
	parts := strings.Split(v, ",")
	i := 0
	for i < len(parts) && parts[i] != "" && (parts[i][0] < '0' || parts[i][0] > '9') {
		i++
	}
	l, err := cpuset.ParseList(strings.Join(parts[i:], ","))
	if err != nil {
		return nil
	}
	return l
}

func (m *machine) loadIRQs() {
	names := map[string]string{}
	if s, ok := m.read("proc/interrupts"); ok {
		for _, l := range strings.Split(s, "\n") {
			f := strings.Fields(l)
			if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
				continue
			}
			n := strings.TrimSuffix(f[0], ":")
			names[n] = f[len(f)-1]
		}
	}
	ents, _ := fs.ReadDir(m.fsys, "proc/irq")
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		d := path.Join("proc/irq", e.Name())
		q := irq{num: e.Name(), name: names[e.Name()]}
		if l := m.list(d + "/effective_affinity_list"); l != nil {
			q.cpus, q.effective = l, true
		} else {
			q.cpus = m.list(d + "/smp_affinity_list")
		}
		m.irqs = append(m.irqs, q)
	}
	sort.Slice(m.irqs, func(i, j int) bool {
		a, _ := strconv.Atoi(m.irqs[i].num)
		b, _ := strconv.Atoi(m.irqs[j].num)
		return a < b
	})
}

// cpuDMALatency reads the current CPU latency QoS limit in µs: reading
// /dev/cpu_dma_latency gives the aggregate of every holder's request
// (2000000000: none). Opening it adds a request at the default, which
// constrains nothing.
func (m *machine) cpuDMALatency() (int32, bool) {
	f, err := m.fsys.Open("dev/cpu_dma_latency")
	if err != nil {
		return 0, false
	}
	defer f.Close() //nolint:errcheck // read-only
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return 0, false
	}
	return int32(binary.NativeEndian.Uint32(b[:])), true
}

func union(a, b []int) []int {
	seen := map[int]bool{}
	for _, c := range append(append([]int{}, a...), b...) {
		seen[c] = true
	}
	return keys(seen)
}

func keys(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

func minus(a, b []int) []int {
	drop := map[int]bool{}
	for _, c := range b {
		drop[c] = true
	}
	var out []int
	for _, c := range a {
		if !drop[c] {
			out = append(out, c)
		}
	}
	return out
}

func intersect(a, b []int) []int {
	in := map[int]bool{}
	for _, c := range b {
		in[c] = true
	}
	var out []int
	for _, c := range a {
		if in[c] {
			out = append(out, c)
		}
	}
	return out
}

func fmtList(cpus []int) string {
	if len(cpus) == 0 {
		return "none"
	}
	return cpuset.FormatList(cpus)
}

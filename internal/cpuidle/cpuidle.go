// Package cpuidle reads how long this machine's CPUs may take to leave
// idle: the exit latency of their deepest enabled idle state
// (/sys/devices/system/cpu/cpu*/cpuidle/state*/latency), and on a virtual
// machine a bound on waking a halted vCPU. The analysis judges a late timer
// interrupt on an idle CPU against it: a gap above the bound is not an
// exit from idle. Read once a session (Detect), off the start-up path.
package cpuidle

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
)

// IRQAllowanceNs is added to an idle state's exit latency for the rest
// of the path to the timer callback (interrupt delivery and entry): the
// kernel's latency figures cover the state's exit alone.
const IRQAllowanceNs = 100_000

// VMWakeNs bounds waking a halted vCPU for its timer interrupt: the guest's
// HLT exits to the host, which must run the vCPU thread again. Measured on
// this project's 2-vCPU KVM VM (haltpoll idle driver, states POLL 0 us and
// haltpoll 1 us) as the timer wakeup latency of a pinned FIFO thread onto
// its idle CPU, halt allowed (`cyclictest --laptop -m -p 95 -a 1 -i 2000
// -l 4000`): median 27 us, p99 126 us over 4000 wakeups (p99 69-91 us in
// runs of 500-800 at 10 ms); rarer tails of milliseconds are hypervisor
// stalls (steal), which the analysis takes out first. 500 us is four times
// the p99: the "few hundred us" of a VM.
const VMWakeNs = 500_000

// Bound is the longest a CPU of this machine is expected to take from a
// timer's expiry, while idle, to the timer's callback.
type Bound struct {
	Ns uint64
	// Why says where Ns comes from, for the verdict.
	Why string
	// SMICounter: the hardware counts SMIs (see SMICounter).
	SMICounter bool
}

// Detect returns the running machine's bound, read once (idle states
// change with a driver or a write to a state's disable file, which nobody
// makes mid-run). Safe for concurrent use.
var Detect = sync.OnceValue(func() Bound { return Read(os.DirFS("/")) })

// Read reads the bound from fsys (the root file system): the deepest
// enabled idle state's exit latency of any CPU plus IRQAllowanceNs, and on
// a virtual machine at least VMWakeNs.
func Read(fsys fs.FS) Bound {
	lat, name, ok := deepest(fsys)
	b := Bound{Ns: IRQAllowanceNs, SMICounter: SMICounter(fsys)}
	switch {
	case ok:
		b.Ns += lat
		b.Why = fmt.Sprintf("its deepest idle state, %s, exits in %d us (cpuidle), plus %d us for the interrupt",
			name, lat/1000, IRQAllowanceNs/1000)
	default:
		b.Why = fmt.Sprintf("no cpuidle states readable: %d us for the interrupt", IRQAllowanceNs/1000)
	}
	if virtual(fsys) && b.Ns < VMWakeNs {
		b.Ns = VMWakeNs
		b.Why = fmt.Sprintf("a virtual machine: waking a halted vCPU takes up to about %d us (on a KVM VM: median 27 us, p99 126 us); %s",
			VMWakeNs/1000, b.Why)
	}
	return b
}

// deepest returns the largest exit latency (ns) of an enabled idle state
// of any CPU, and its name.
func deepest(fsys fs.FS) (lat uint64, name string, ok bool) {
	dirs, _ := fs.Glob(fsys, "sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*")
	for _, d := range dirs {
		if v, err := readUint(fsys, path.Join(d, "disable")); err == nil && v != 0 {
			continue
		}
		us, err := readUint(fsys, path.Join(d, "latency"))
		if err != nil {
			continue
		}
		if !ok || us*1000 > lat {
			lat, ok = us*1000, true
			n, _ := fs.ReadFile(fsys, path.Join(d, "name"))
			name = strings.TrimSpace(string(n))
		}
	}
	return lat, name, ok
}

// virtual tells a virtual machine: the x86 "hypervisor" CPU flag, a
// /sys/hypervisor type (Xen), or the haltpoll idle driver (KVM guests).
func virtual(fsys fs.FS) bool {
	if b, err := fs.ReadFile(fsys, "sys/devices/system/cpu/cpuidle/current_driver"); err == nil &&
		strings.TrimSpace(string(b)) == "haltpoll" {
		return true
	}
	if b, err := fs.ReadFile(fsys, "sys/hypervisor/type"); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return true
	}
	b, err := fs.ReadFile(fsys, "proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "flags") {
			return strings.Contains(line+" ", " hypervisor ")
		}
	}
	return false
}

func readUint(fsys fs.FS, name string) (uint64, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// SMICounter tells whether the hardware exposes a count of System
// Management Interrupts (the msr PMU's smi event, perf's msr/smi/): the
// only trace an SMI leaves. A VM exposes none.
func SMICounter(fsys fs.FS) bool {
	_, err := fs.Stat(fsys, "sys/bus/event_source/devices/msr/events/smi")
	return err == nil
}

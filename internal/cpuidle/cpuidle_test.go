package cpuidle

import (
	"strings"
	"testing"
	"testing/fstest"
)

func state(fs fstest.MapFS, cpu, n, name, latency, disable string) {
	d := "sys/devices/system/cpu/cpu" + cpu + "/cpuidle/state" + n + "/"
	fs[d+"name"] = &fstest.MapFile{Data: []byte(name + "\n")}
	fs[d+"latency"] = &fstest.MapFile{Data: []byte(latency + "\n")}
	fs[d+"disable"] = &fstest.MapFile{Data: []byte(disable + "\n")}
}

// The bound is the deepest enabled idle state's exit latency of any CPU
// plus the interrupt's allowance; a disabled state does not count; a
// virtual machine is bounded by its halt wakeup at least.
func TestRead(t *testing.T) {
	metal := fstest.MapFS{"proc/cpuinfo": &fstest.MapFile{Data: []byte("processor\t: 0\nflags\t\t: fpu vme de pse tsc\n")}}
	state(metal, "0", "0", "POLL", "0", "0")
	state(metal, "0", "1", "C1", "2", "0")
	state(metal, "1", "2", "C6", "133", "0")
	state(metal, "1", "3", "C10", "890", "1") // disabled
	b := Read(metal)
	if b.Ns != 133_000+IRQAllowanceNs || !strings.Contains(b.Why, "C6, exits in 133 us") || b.SMICounter {
		t.Errorf("bare metal: %+v, want C6's 133 us + %d ns, no SMI counter", b, IRQAllowanceNs)
	}

	// This project's VM: POLL 0 and haltpoll 1 us, the haltpoll driver.
	vm := fstest.MapFS{"sys/devices/system/cpu/cpuidle/current_driver": &fstest.MapFile{Data: []byte("haltpoll\n")}}
	state(vm, "0", "0", "POLL", "0", "0")
	state(vm, "0", "1", "haltpoll idle", "1", "0")
	b = Read(vm)
	if b.Ns != VMWakeNs || !strings.Contains(b.Why, "virtual machine") || !strings.Contains(b.Why, "haltpoll idle, exits in 1 us") {
		t.Errorf("VM: %+v, want %d ns", b, VMWakeNs)
	}

	// A hypervisor flag and no cpuidle at all; an SMI counter.
	bare := fstest.MapFS{"proc/cpuinfo": &fstest.MapFile{Data: []byte("flags\t\t: fpu hypervisor lahf_lm\n")},
		"sys/bus/event_source/devices/msr/events/smi": &fstest.MapFile{Data: []byte("event=0x04\n")}}
	b = Read(bare)
	if b.Ns != VMWakeNs || !strings.Contains(b.Why, "no cpuidle states readable") || !b.SMICounter {
		t.Errorf("no cpuidle, hypervisor flag, SMI counter: %+v", b)
	}
	if b := Read(fstest.MapFS{}); b.Ns != IRQAllowanceNs || b.SMICounter {
		t.Errorf("nothing readable: %+v, want the interrupt's allowance alone", b)
	}
}

// Detect reads this machine once, cheaply (it is called at the first
// analysis of a session).
func TestDetect(t *testing.T) {
	b := Detect()
	if b.Ns < IRQAllowanceNs || b.Why == "" {
		t.Errorf("Detect: %+v", b)
	}
	if Detect() != b {
		t.Error("Detect read twice differs")
	}
}

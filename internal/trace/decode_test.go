package trace

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// decodeFixture is one raw event of every type, a wakeup of every waker
// kind and a sleep of every reason SleepReason tells, with the names they
// are decoded with (no /proc: every comm and IRQ name is given).
func decodeFixture(t *testing.T) (*Raw, *Names) {
	t.Helper()
	// Kernel functions for timer callbacks and stacks, one page apart.
	funcs := []string{"hrtimer_wakeup", "tick_nohz_handler", "__schedule", "schedule",
		"rtlock_slowlock_locked", "futex_lock_pi", "futex_wait", "do_nanosleep", "timerfd_read", "ep_poll",
		"do_sys_poll", "eventfd_read", "pipe_read", "__mutex_lock", "do_wait", "irq_thread", "mystery_wait",
		"asm_sysvec_apic_timer_interrupt", "native_safe_halt", "hrtimer_interrupt"}
	var ks strings.Builder
	addr := map[string]uint64{}
	for i, f := range funcs {
		addr[f] = 0xffffffff81000000 + uint64(i)*0x1000
		fmt.Fprintf(&ks, "%x T %s\n", addr[f], f)
	}
	path := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(path, []byte(ks.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	syms, err := ksym.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	stacks := [][]string{
		{"__schedule", "schedule", "rtlock_slowlock_locked"},
		{"schedule", "futex_lock_pi"},
		{"schedule", "futex_wait"},
		{"schedule", "do_nanosleep"},
		{"schedule", "timerfd_read"},
		{"schedule", "ep_poll"},
		{"schedule", "do_sys_poll"},
		{"schedule", "eventfd_read"},
		{"schedule", "pipe_read"},
		{"schedule", "__mutex_lock"},
		{"schedule", "do_wait"},
		{"schedule", "irq_thread"},
		{"schedule", "mystery_wait"},
		{"hrtimer_interrupt", "asm_sysvec_apic_timer_interrupt", "native_safe_halt"},
		{"hrtimer_interrupt", "asm_sysvec_apic_timer_interrupt"},
	}
	stackFn := func(id uint32) ([]uint64, error) {
		var out []uint64
		for _, f := range stacks[id] {
			out = append(out, addr[f]+0x10)
		}
		return out, nil
	}
	names := NewNames(syms, stackFn)
	names.irqs = map[int]string{33: "eth0", 24: "slowirq"}
	for tid, c := range map[uint32]string{7: "control", 60: "hog", 61: "waker"} {
		names.SetComm(tid, c)
	}
	const start = 1_000_000
	var evs []engine.Event
	ev := func(ts uint64, typ, flags uint8, a, b, c uint32, comm string) *engine.Event {
		e := engine.Event{Ts: start + ts, Cpu: 1, Type: typ, Flags: flags, A: a, B: b, C: uint16(c), PrioA: 19, PrioB: 120, PolA: 1}
		for i := 0; i < len(comm) && i < 15; i++ {
			e.Comm[i] = int8(comm[i])
		}
		evs = append(evs, e)
		return &evs[len(evs)-1]
	}
	xy := func(e *engine.Event, x, y uint64) {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], x)
		binary.LittleEndian.PutUint64(b[8:], y)
		for i := range b {
			e.Comm[i] = int8(b[i])
		}
	}
	ev(0, evSwitch, 0, 60, 7, 1, "control")
	ev(10, evSwitch, 1, 7, 60, 0, "hog")
	ev(20, evSwitch, 0, 7, 0, 2, "")
	ev(30, evWakeup, wakerTask, 7, 61, 1, "waker")
	ev(40, evWakeup, wakerHardIRQ, 7, 33, 0, "")
	ev(50, evWakeup, wakerSoftIRQ, 7, 3, 0, "")
	xy(ev(60, evWakeup, wakerTimer, 7, 0, 1, ""), addr["hrtimer_wakeup"]+4, start+55)
	ev(70, evMigrate, 0, 7, 0, 1, "")
	ev(80, evIRQEntry, 0, 33, 0, 0, "")
	ev(90, evIRQExit, 0, 33, 0, 0, "")
	ev(100, evSoftirqEntry, 0, 9, 0, 0, "")
	ev(110, evSoftirqExit, 0, 9, 0, 0, "")
	xy(ev(120, evTimerEntry, 1, 0, 0, 0, ""), addr["tick_nohz_handler"], start+115)
	xy(ev(130, evTimerExit, 1, 0, 0, 0, ""), addr["tick_nohz_handler"], 0)
	xy(ev(131, evTimerEntry, 3, 10_000_000, 0, 0, ""), addr["hrtimer_wakeup"], start+125) // its slack known: 10 ms
	xy(ev(132, evTimerArm, 2, 7, 0, 0, ""), start+900, 50_000)                            // arming, slack 50 us
	for i := range 13 {
		e := ev(140+uint64(i), evSleep, 0, 7, uint32(i), 1, "")
		if i == 2 || i == 3 {
			xy(e, start+500, 0) // a timer armed: futex wait with timeout, nanosleep
		}
	}
	xy(ev(160, evSleep, 0, 7, 0xffffffff, 1, ""), start+600, 0) // no stack, armed: timer sleep
	ev(161, evSleep, 0, 7, 0xffffffff, 2, "")                   // no stack sample
	ev(162, evSleep, 0, 7, 0xffffffff, 0x1000, "")              // rtlock state bit
	ev(163, evSleep, 0, 7, 2, 1, "")                            // futex wait, no timeout
	ev(170, evStack, 0, 60, 7, 13, "hog")                       // kernel code interrupted
	ev(171, evStack, 0, 60, 7, 14, "hog")                       // user space interrupted
	ev(180, evUserReturn, 0, 7, 0, 0, "")
	ev(190, evHandlerEntry, 0, 7, 24, 0, "")
	ev(200, evHandlerExit, 0, 7, 24, 0, "")
	xy(ev(210, evSteal, 0, 0, 0, 0, ""), 5000, start+150)
	ev(220, evExit, 0, 7, 0, 0, "")
	ev(230, 99, 0, 0, 0, 0, "") // a type this decoder does not know
	return &Raw{meta: Trace{Metric: "latency", TID: 7, Value: 230, Start: start, End: start + 230, CPUs: []int{1}}, events: evs}, names
}

// TestDecodeGolden: the JSON of one event of every type, every waker kind
// and every sleep reason is byte-identical to testdata/decode.golden (go
// test -update rewrites it): the vocabulary's text is the JSON's.
func TestDecodeGolden(t *testing.T) {
	raw, names := decodeFixture(t)
	tr := raw.Decode(names)
	got, err := json.MarshalIndent(tr, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/decode.golden", append(got, '\n'))
	// Read back, the trace encodes to the same bytes.
	var back Trace
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(&back, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, got) {
		t.Errorf("decoded and encoded again, the trace differs:\n%s", again)
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}

package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/rtscope/rtscope/internal/tpformat"
)

// readCaptured reads the formats captured from a 6.18 host (tpformat's testdata).
func readCaptured(edit func(event, text string) string) func(system, event string) (*tpformat.Format, error) {
	return func(_, event string) (*tpformat.Format, error) {
		b, err := os.ReadFile(filepath.Join("..", "tpformat", "testdata", event+".format"))
		if err != nil {
			return nil, err
		}
		text := string(b)
		if edit != nil {
			text = edit(event, text)
		}
		return tpformat.ParseFormat(text)
	}
}

// Every load-time offset of classic.bpf.c is bound, to the kernel's layout.
func TestClassicOffsets(t *testing.T) {
	offs, err := classicOffsets(readCaptured(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint32{"off_switch_prev_state": 32, "off_switch_next_pid": 56, "off_waking_target_cpu": 32,
		"off_newtask_clone_flags": 32, "off_hrstart_softexpires": 32, "off_hrstart_expires": 24, "off_hrentry_now": 16, "off_migrate_dest_cpu": 24,
		"off_rename_newcomm": 28}
	for k, v := range want {
		if offs[k] != v {
			t.Errorf("%s = %d, want %d", k, offs[k], v)
		}
	}
	spec, err := loadClassic()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range classicFields {
		if _, ok := spec.Variables[b.variable]; !ok {
			t.Errorf("classic.bpf.c has no variable %s", b.variable)
		}
	}
	for name := range spec.Variables {
		if strings.HasPrefix(name, "off_") {
			if _, ok := offs[name]; !ok {
				t.Errorf("variable %s is never set", name)
			}
		}
	}
	for _, a := range classicAttach {
		if spec.Programs[a.prog] == nil {
			t.Errorf("no program %s", a.prog)
		}
	}
	// + classic_scan, reapply_slo and settle_held, run with BPF_PROG_TEST_RUN,
	// and the irq_work receipts, which the kernel does not let a classic
	// tracepoint program attach to (classicAttach)
	if len(classicAttach)+5 != len(spec.Programs) {
		t.Errorf("%d programs attached of %d", len(classicAttach), len(spec.Programs))
	}
}

// arm64's receipt record (ipi:ipi_entry, one pointer after the common
// fields) binds its reason: the arm64 guest's classic engine refused to
// load ("field reason is const char * of 8 bytes at 8, which the classic
// engine cannot read"), --ipi or not.
func TestClassicOffsetsARM64Receipts(t *testing.T) {
	// arm64's layout (include/trace/events/ipi.h, ipi_handler), as its
	// QEMU guest prints it.
	b, err := os.ReadFile(filepath.Join("..", "tpformat", "testdata", "arm64", "ipi_entry.format"))
	if err != nil {
		t.Fatal(err)
	}
	format := string(b)
	host := readCaptured(nil)
	offs, err := classicOffsets(func(system, event string) (*tpformat.Format, error) {
		if system == "ipi" && (event == "ipi_entry" || event == "ipi_exit") {
			return tpformat.ParseFormat(format)
		}
		return host(system, event)
	})
	if err != nil {
		t.Fatal(err)
	}
	if offs["off_ipi_entry_reason"] != 8 || offs["off_ipi_exit_reason"] != 8 {
		t.Errorf("reason at %d and %d, want 8", offs["off_ipi_entry_reason"], offs["off_ipi_exit_reason"])
	}
}

// A missing optional field reads as absent; a missing required one, or a
// layout the BPF side cannot read, is refused naming the field.
func TestClassicOffsetsErrors(t *testing.T) {
	drop := func(field string) func(string, string) string {
		return func(_, text string) string {
			var out []string
			for _, l := range strings.Split(text, "\n") {
				if !strings.Contains(l, " "+field+";") {
					out = append(out, l)
				}
			}
			return strings.Join(out, "\n")
		}
	}
	offs, err := classicOffsets(readCaptured(drop("ret")))
	if err != nil || offs["off_irq_exit_ret"] != classicNoField {
		t.Errorf("optional field missing: %v, %d", err, offs["off_irq_exit_ret"])
	}
	if _, err := classicOffsets(readCaptured(drop("next_pid"))); err == nil || !strings.Contains(err.Error(), "next_pid") {
		t.Errorf("required field missing: %v", err)
	}
	// Older kernels' comm as __data_loc where an array is read: refused.
	dataLoc := func(event, text string) string {
		if event != "task_newtask" {
			return text
		}
		return strings.Replace(text, "field:char comm[16];\toffset:12;\tsize:16;", "field:__data_loc char[] comm;\toffset:12;\tsize:4;", 1)
	}
	if _, err := classicOffsets(readCaptured(dataLoc)); err == nil || !strings.Contains(err.Error(), "comm") {
		t.Errorf("__data_loc comm: %v", err)
	}
	missing := func(system, event string) (*tpformat.Format, error) {
		return nil, os.ErrNotExist
	}
	if _, err := classicOffsets(missing); err == nil || !strings.Contains(err.Error(), "sched/sched_switch") {
		t.Errorf("no tracefs: %v", err)
	}
}

// The classic object reads no kernel structure: it has no CO-RE
// relocation, which would need kernel BTF to resolve.
func TestClassicNoCORE(t *testing.T) {
	spec, err := loadClassic()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range spec.Programs {
		for _, ins := range p.Instructions {
			if btf.CORERelocationMetadata(&ins) != nil {
				t.Errorf("%s: CO-RE relocation at %v", name, ins)
			}
		}
		if !strings.HasPrefix(p.SectionName, "tracepoint/") && name != "classic_scan" && name != "reapply_slo" && name != "settle_held" {
			t.Errorf("%s: section %s is not a classic tracepoint", name, p.SectionName)
		}
	}
}

func TestChooseEngine(t *testing.T) {
	for _, c := range []struct{ want, kind string }{{EngineBTF, EngineBTF}, {EngineClassic, EngineClassic}} {
		back, _, err := chooseEngine(c.want, "")
		if err != nil || back.kind() != c.kind {
			t.Errorf("%q: %v %v", c.want, back, err)
		}
	}
	if _, _, err := chooseEngine("bogus", ""); err == nil || !strings.Contains(err.Error(), "--engine") {
		t.Errorf("bogus: %v", err)
	}
	back, why, err := chooseEngine(EngineAuto, "")
	if err != nil {
		t.Fatal(err)
	}
	kind := back.kind()
	if (KernelBTF() == nil) != (kind == EngineBTF) || (kind == EngineClassic) != (why != "") {
		t.Errorf("auto: %s (%s) with KernelBTF() = %v", kind, why, KernelBTF())
	}
}

func TestParseProcStat(t *testing.T) {
	st, err := parseProcStat("4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 -81 0 1 0 123 0 0\n")
	if err != nil || st.comm != "a (b) c" || st.state != 'S' || st.prio != 19 {
		t.Errorf("%+v %v", st, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 nope 0"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// parseStatusTgid reads the Tgid: line of /proc/TID/status, wherever it is.
func TestParseStatusTgid(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"Name:\trtscmp-x\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4321\nNgid:\t0\nPid:\t4322\nPPid:\t1\n", 4321, true},
		{"Name:\tTgid: 7\nTgid:\t12\n", 12, true}, // a comm that looks like the line is not it
		{"Tgid:\t99", 99, true},
		{"Name:\tx\nPid:\t5\n", 0, false},
		{"Tgid:\t\n", 0, false},
		{"Tgid:\t0\n", 0, false},
		{"Tgid:\t-1\n", 0, false},
		{"Tgid:\t4294967296\n", 0, false},
	} {
		got, err := parseStatusTgid(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("parseStatusTgid(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := parseStatusTgid(string(b)); err != nil || got != uint32(os.Getpid()) {
		t.Errorf("this thread's status: tgid %d, %v; want %d", got, err, os.Getpid())
	}
}

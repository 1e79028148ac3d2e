package ksym

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadAndResolve(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "kallsyms")
	data := "ffffffff81000000 T _stext\n" +
		"ffffffff81000100 t hrtimer_wakeup\n" +
		"ffffffff81000200 D some_data\n" +
		"ffffffff81000300 T do_nanosleep\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.Addr("hrtimer_wakeup"); got != 0xffffffff81000100 {
		t.Fatalf("Addr = %x", got)
	}
	if got := tab.Addr("some_data"); got != 0 {
		t.Fatalf("data symbols must be skipped, got %x", got)
	}
	if got := tab.Name(0xffffffff81000110); got != "hrtimer_wakeup+0x10" {
		t.Fatalf("Name = %q", got)
	}
	if got := tab.Func(0xffffffff81000300); got != "do_nanosleep" {
		t.Fatalf("Func = %q", got)
	}
	if got := tab.Name(0x10); got != "0x10" {
		t.Fatalf("below first symbol: %q", got)
	}
}

// Ranges finds clones by their base name and ends each range at the next
// symbol past aliases.
func TestRanges(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kallsyms")
	data := "ffffffff81000000 T pipe_write\n" +
		"ffffffff81000100 t pipe_read.isra.0\n" +
		"ffffffff81000100 t alias_of_pipe_read\n" +
		"ffffffff81000180 T other\n" +
		"ffffffff81000200 T pipe_writer\n" +
		"ffffffff81000300 T last\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	got := tab.Ranges(map[string]bool{"pipe_write": true, "pipe_read": true, "last": true})
	want := []Range{{"pipe_write", 0xffffffff81000000, 0xffffffff81000100}, {"pipe_read", 0xffffffff81000100, 0xffffffff81000180}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Ranges = %x, want %x (the last symbol has no end)", got, want)
	}
}

// Load reads module lines ("name\t[module]"), keeps the file's first
// address of a name that appears twice (static functions of two files),
// resolves names that are prefixes of others exactly, and allocates the
// table's names once.
func TestLoadNamesAndDuplicates(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kallsyms")
	data := "ffffffff81000300 t dup\n" +
		"ffffffff81000100 t dup\n" +
		"ffffffff81000200 T dup_long\n" +
		"ffffffffc0001000 t mod_func\t[nf_tables]\n" +
		"ffffffff81000400 r rodata_sym\n" +
		"0000000000000000 T hidden\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint64{"dup": 0xffffffff81000300, "dup_long": 0xffffffff81000200, "du": 0,
		"mod_func": 0xffffffffc0001000, "rodata_sym": 0, "hidden": 0, "": 0} {
		if got := tab.Addr(name); got != want {
			t.Errorf("Addr(%q) = %x, want %x", name, got, want)
		}
	}
	for addr, want := range map[uint64]string{0xffffffff81000100: "dup", 0xffffffff81000250: "dup_long+0x50",
		0xffffffffc0001008: "mod_func+0x8"} {
		if got := tab.Name(addr); got != want {
			t.Errorf("Name(%x) = %q, want %q", addr, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(10, func() { _ = tab.Name(0xffffffff81000100) }); allocs != 0 {
		t.Errorf("Name of a symbol's start allocates %v times: names must be slices of the table's one string", allocs)
	}
	if err := tab.Reload(p); err != nil || tab.Addr("dup_long") != 0xffffffff81000200 {
		t.Errorf("Reload: %v, dup_long at %x", err, tab.Addr("dup_long"))
	}
}

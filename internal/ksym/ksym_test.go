package ksym

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
	"weak"
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
// resolves names that are prefixes of others exactly, and allocates a
// name it returns once (a copy: TestNamesOutliveNoTable).
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
	if allocs := testing.AllocsPerRun(10, func() { _ = tab.Name(0xffffffff81000100) }); allocs > 1 {
		t.Errorf("Name of a symbol's start allocates %v times: its copy only", allocs)
	}
	if err := tab.Reload(p); err != nil || tab.Addr("dup_long") != 0xffffffff81000200 {
		t.Errorf("Reload: %v, dup_long at %x", err, tab.Addr("dup_long"))
	}
}

// TestNamesOutliveNoTable: names resolved from every one of 50 re-reads
// of a table, all still held, keep none of the replaced tables' names
// alive (each 64 KiB here): a name sliced out of them kept its table's
// whole string, and serve's heap grew by a table each time a window kept
// a stack frame from a new re-read. Deterministic: after a collection,
// a weak pointer to a replaced table's names is nil unless something
// reachable refers into them.
func TestNamesOutliveNoTable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kallsyms")
	var b strings.Builder
	for i := range 2048 {
		fmt.Fprintf(&b, "%x T function_with_a_long_name_%05d\n", 0xffffffff81000000+uint64(i)*0x100, i)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	const reloads = 50
	var held []string
	var replaced []weak.Pointer[byte]
	for range reloads {
		replaced = append(replaced, weak.Make(unsafe.StringData(tab.names)))
		if err := tab.Reload(p); err != nil {
			t.Fatal(err)
		}
		held = append(held, tab.Name(0xffffffff81000100), tab.Func(0xffffffff81000200))
		for _, r := range tab.Ranges(map[string]bool{"function_with_a_long_name_00003": true}) {
			held = append(held, r.Name)
		}
	}
	runtime.GC()
	runtime.GC() // a weak pointer is cleared by the cycle that finds its object unreachable
	alive := 0
	for _, r := range replaced {
		if r.Value() != nil {
			alive++
		}
	}
	if alive != 0 {
		t.Errorf("%d of %d replaced tables' names still alive with %d resolved names held", alive, reloads, len(held))
	}
	if want := []string{"function_with_a_long_name_00001", "function_with_a_long_name_00002", "function_with_a_long_name_00003"}; len(held) != 3*reloads || !slices.Equal(held[:3], want) {
		t.Errorf("names resolved: %d, first %q, want %q", len(held), held[:min(3, len(held))], want)
	}
	runtime.KeepAlive(held)
}

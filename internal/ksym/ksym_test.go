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

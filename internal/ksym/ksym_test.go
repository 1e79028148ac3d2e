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

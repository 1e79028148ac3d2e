package trace

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/ksym"
)

// TestFuncTakesPrefetchedSyms: a frame of a program loaded after the
// table was read (an offset past the last program listed) is named from
// the table PrefetchSyms read, and Func does not read /proc/kallsyms in
// the session's goroutine for it; without a prefetch it re-reads as before.
func TestFuncTakesPrefetchedSyms(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) *ksym.Table {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		tab, err := ksym.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	const old = "ffffffffc0000000 t bpf_prog_aaaa_old\n"
	const frame = 0xffffffffc0001010 // in the program loaded later
	for _, prefetch := range []bool{true, false} {
		names := NewNames(write("before", old), nil)
		if prefetch {
			ch := make(chan *ksym.Table, 1)
			ch <- write("after", old+"ffffffffc0001000 t bpf_prog_bbbb_on_sched_switch\n")
			names.prefetched = ch
		}
		got := names.Func(frame)
		if prefetch && got != "bpf_prog_bbbb_on_sched_switch" {
			t.Errorf("with a prefetched table, Func(%#x) = %q, want the program loaded later", uint64(frame), got)
		}
		if !prefetch && got != "bpf_prog_aaaa_old" {
			// /proc/kallsyms of this machine does not list the test's addresses.
			t.Logf("without a prefetch, Func(%#x) = %q after re-reading /proc/kallsyms", uint64(frame), got)
		}
		if names.prefetched != nil {
			t.Errorf("prefetch %v: the prefetched table was not taken", prefetch)
		}
		if time.Since(names.reloaded) > time.Minute {
			t.Errorf("prefetch %v: the re-read was not noted: the next frame would read again", prefetch)
		}
	}
}

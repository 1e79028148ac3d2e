package isolation

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Without -c the isolated and nohz_full CPUs are watched; with neither,
// one sentence asks for -c.
func TestDefaultCPUs(t *testing.T) {
	dir := t.TempDir()
	old := sysCPU
	sysCPU = dir
	t.Cleanup(func() { sysCPU = old })
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("isolated", "\n")
	write("nohz_full", "(null)\n")
	_, err := DefaultCPUs()
	if err == nil || !strings.Contains(err.Error(), "-c") || strings.Count(err.Error(), ".") > 0 {
		t.Errorf("no isolated CPU: %v, want one sentence asking for -c", err)
	}
	write("isolated", "2-3\n")
	write("nohz_full", "3,5\n")
	if got, err := DefaultCPUs(); err != nil || !reflect.DeepEqual(got, []int{2, 3, 5}) {
		t.Errorf("isolated 2-3, nohz_full 3,5: %v %v, want [2 3 5]", got, err)
	}
}

func TestListString(t *testing.T) {
	if got := listString([]int{0, 2, 3, 4, 7}); got != "0,2-4,7" {
		t.Errorf("listString: %s", got)
	}
}

// The per-CPU hashes keep their size on a small machine and shrink to the
// budget on a large one.
func TestCapPerCPU(t *testing.T) {
	for _, c := range []struct {
		possible int
		want     uint32
	}{{2, 4096}, {256, perCPUBudget / (256 * 56)}} {
		spec, err := loadIso()
		if err != nil {
			t.Fatal(err)
		}
		capPerCPU(spec, c.possible)
		if m := spec.Maps["iso_tasks"]; m.MaxEntries != c.want || m.ValueSize != 56 {
			t.Errorf("%d CPUs: iso_tasks %d entries of %d bytes, want %d of 56", c.possible, m.MaxEntries, m.ValueSize, c.want)
		}
	}
}

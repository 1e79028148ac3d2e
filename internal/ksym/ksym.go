// Package ksym resolves kernel text addresses to symbol names from /proc/kallsyms.
package ksym

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

type sym struct {
	addr uint64
	name string
}

// Table is a sorted kernel symbol table.
type Table struct {
	syms   []sym
	byName map[string]uint64
}

var (
	once   sync.Once
	kernel *Table
	kerr   error
)

// Kernel returns the running kernel's symbol table, read once.
func Kernel() (*Table, error) {
	once.Do(func() { kernel, kerr = Load("/proc/kallsyms") })
	return kernel, kerr
}

// Reload re-reads the table in place: JIT-compiled BPF programs and modules
// loaded after the first read get their names.
func (t *Table) Reload(path string) error {
	n, err := Load(path)
	if err != nil {
		return err
	}
	t.syms, t.byName = n.syms, n.byName
	return nil
}

// Load reads a kallsyms-format file; only text (code) symbols are kept.
func Load(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read-only
	t := &Table{byName: map[string]uint64{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		switch fields[1] {
		case "t", "T", "w", "W":
		default:
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		t.syms = append(t.syms, sym{addr, fields[2]})
		if _, dup := t.byName[fields[2]]; !dup {
			t.byName[fields[2]] = addr
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Slice(t.syms, func(i, j int) bool { return t.syms[i].addr < t.syms[j].addr })
	return t, nil
}

// Addr returns the address of a symbol; 0 when unknown or hidden (kptr_restrict).
func (t *Table) Addr(name string) uint64 {
	if t == nil {
		return 0
	}
	return t.byName[name]
}

// Name returns the symbol containing addr, as "name" or "name+0xoff".
func (t *Table) Name(addr uint64) string {
	if t == nil || len(t.syms) == 0 || addr == 0 {
		return fmt.Sprintf("0x%x", addr)
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].addr > addr }) - 1
	if i < 0 {
		return fmt.Sprintf("0x%x", addr)
	}
	if off := addr - t.syms[i].addr; off != 0 {
		return fmt.Sprintf("%s+0x%x", t.syms[i].name, off)
	}
	return t.syms[i].name
}

// Func returns just the function name containing addr.
func (t *Table) Func(addr uint64) string {
	n := t.Name(addr)
	if i := strings.IndexByte(n, '+'); i > 0 {
		return n[:i]
	}
	return n
}

// Range is the text of one kernel function: [Start, End), End being the
// next symbol's address (kallsyms has no sizes).
type Range struct {
	Name       string
	Start, End uint64
}

// Ranges returns the text ranges of the functions named in names, in
// address order, compiler clones included ("pipe_write.isra.0" is
// pipe_write's), in one pass over the table.
func (t *Table) Ranges(names map[string]bool) []Range {
	if t == nil {
		return nil
	}
	var out []Range
	for i, s := range t.syms {
		base, _, _ := strings.Cut(s.name, ".")
		if !names[base] {
			continue
		}
		j := i + 1 // past aliases at the same address
		for j < len(t.syms) && t.syms[j].addr == s.addr {
			j++
		}
		if j < len(t.syms) {
			out = append(out, Range{Name: base, Start: s.addr, End: t.syms[j].addr})
		}
	}
	return out
}

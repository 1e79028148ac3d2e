// Package ksym resolves kernel text addresses to symbol names from /proc/kallsyms.
package ksym

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// sym is a text symbol: its name is names[off:off+n]. The table holds no
// pointer but the names' one string, so the garbage collector has nothing
// to scan in it: as 122k strings and a map it was 15 MB of a 22 MB heap
// that serve's collector walked at every cycle.
type sym struct {
	addr   uint64
	off, n uint32
}

// Table is a sorted kernel symbol table. It is read-only once loaded but
// for Reload, which the caller orders with every other use. No string it
// returns shares memory with its names: a name sliced out of them kept
// the whole string of a table's names (3 MB here) alive, and one kept
// from each re-read (say, a frame of a window's stack, held while its task
// lives) made serve's heap grow by a table at a time (make soak: the live
// heap's symbol tables 8.2 -> 14.0 -> 16.9 MB at 1, 2 and 3 minutes).
type Table struct {
	names  string
	syms   []sym // by address
	byName []sym // by name, the file's first of each name first
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
	*t = *n
	return nil
}

// Load reads a kallsyms-format file ("address type name [module]" a
// line); only text (code) symbols are kept. Start-up reads it once: the
// file in one read and the lines cut by hand, each order sorted with the
// file order as the tie-break (the stable order, without a stable sort's
// merges) took 70 ms instead of 165-300 ms for this kernel's 5.4 MB.
func Load(path string) (*Table, error) {
	data, err := readAll(path)
	if err != nil {
		return nil, err
	}
	var names []byte
	var syms []sym
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		addr, name, ok := textSymbol(line)
		if !ok {
			continue
		}
		syms = append(syms, sym{addr, uint32(len(names)), uint32(len(name))})
		names = append(names, name...)
	}
	if len(names) > math.MaxUint32 {
		return nil, fmt.Errorf("%s: %d bytes of names, more than a table holds", path, len(names))
	}
	t := &Table{names: string(names), syms: syms, byName: slices.Clone(syms)}
	// off grows with the file's order: the tie-break keeps it, as a stable sort would.
	slices.SortFunc(t.syms, func(a, b sym) int { return cmp.Or(cmp.Compare(a.addr, b.addr), cmp.Compare(a.off, b.off)) })
	slices.SortFunc(t.byName, func(a, b sym) int {
		return cmp.Or(strings.Compare(t.name(a), t.name(b)), cmp.Compare(a.off, b.off))
	})
	return t, nil
}

// readAll reads a file whose size stat does not tell (/proc's): in 1 MiB
// reads into a buffer that starts at 8 MiB (this kernel's kallsyms is 5.4
// MB), where os.ReadFile's doubling from 512 bytes spent 30 ms copying.
func readAll(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read-only
	buf := make([]byte, 0, 8<<20)
	for {
		if cap(buf)-len(buf) < 1<<20 {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || (err == nil && n == 0) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// textSymbol parses one kallsyms line: the address and name of a text
// symbol (type t, T, w or W, non-zero address), else ok false.
func textSymbol(line []byte) (addr uint64, name []byte, ok bool) {
	fields := [3][]byte{}
	n := 0
	for n < 3 {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 {
			break
		}
		i := bytes.IndexAny(line, " \t")
		if i < 0 {
			i = len(line)
		}
		fields[n], line = line[:i], line[i:]
		n++
	}
	if n < 3 || len(fields[1]) != 1 {
		return 0, nil, false
	}
	switch fields[1][0] {
	case 't', 'T', 'w', 'W':
	default:
		return 0, nil, false
	}
	addr, err := strconv.ParseUint(string(fields[0]), 16, 64)
	if err != nil || addr == 0 {
		return 0, nil, false
	}
	return addr, fields[2], true
}

func (t *Table) name(s sym) string { return t.names[s.off : s.off+s.n] }

// Addr returns the address of a symbol; 0 when unknown or hidden (kptr_restrict).
func (t *Table) Addr(name string) uint64 {
	if t == nil {
		return 0
	}
	i, found := slices.BinarySearchFunc(t.byName, name, func(s sym, name string) int { return strings.Compare(t.name(s), name) })
	if !found {
		return 0
	}
	return t.byName[i].addr
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
		return fmt.Sprintf("%s+0x%x", t.name(t.syms[i]), off)
	}
	return strings.Clone(t.name(t.syms[i])) // not a slice of names (Table)
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
		base, _, _ := strings.Cut(t.name(s), ".")
		if !names[base] {
			continue
		}
		j := i + 1 // past aliases at the same address
		for j < len(t.syms) && t.syms[j].addr == s.addr {
			j++
		}
		if j < len(t.syms) {
			out = append(out, Range{Name: strings.Clone(base), Start: s.addr, End: t.syms[j].addr})
		}
	}
	return out
}

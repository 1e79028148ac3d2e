package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
)

// Objects are the BPF programs and maps one process holds, found through its
// file descriptors (bpf-prog, bpf-map and bpf_link fds and their fdinfo), so
// that programs other users of this machine load at the same time are never
// counted, and a map shared by several collections counts once (by map id).
type Objects struct {
	Progs map[uint32]bool // prog ids
	Maps  map[uint32]int  // map id -> memlock bytes
	// ProgMemlock is the memlock of the programs (by prog id).
	ProgMemlock map[uint32]int
	// Links counts the process's BPF links: its attached programs.
	Links int
}

// ProcObjects scans /proc/pid/fd.
func ProcObjects(pid int) (*Objects, error) {
	o := &Objects{Progs: map[uint32]bool{}, Maps: map[uint32]int{}, ProgMemlock: map[uint32]int{}}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !strings.HasPrefix(l, "anon_inode:") {
			continue
		}
		kind := strings.Trim(strings.TrimPrefix(l, "anon_inode:"), "[]")
		if kind != "bpf-prog" && kind != "bpf-map" && kind != "bpf_link" {
			continue
		}
		f := fdinfo(pid, e.Name())
		switch kind {
		case "bpf-prog":
			id := uint32(f["prog_id"])
			o.Progs[id] = true
			o.ProgMemlock[id] = f["memlock"]
		case "bpf_link":
			o.Links++
			if id, ok := f["prog_id"]; ok {
				o.Progs[uint32(id)] = true
			}
		case "bpf-map":
			o.Maps[uint32(f["map_id"])] = f["memlock"]
		}
	}
	return o, nil
}

func fdinfo(pid int, fd string) map[string]int {
	out := map[string]int{}
	fh, err := os.Open(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd))
	if err != nil {
		return out
	}
	defer fh.Close() //nolint:errcheck // read-only
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			out[k] = n
		}
	}
	return out
}

// ProgStat is one program's cumulative kernel run-time statistics.
type ProgStat struct {
	ID      uint32
	Name    string
	Runtime uint64 // ns
	Count   uint64
	Misses  uint64 // not run: recursion
}

// Snapshot reads the statistics of the given programs.
func Snapshot(ids map[uint32]bool) map[uint32]ProgStat {
	out := map[uint32]ProgStat{}
	for id := range ids {
		p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
		if err != nil {
			continue
		}
		st, err := p.Stats()
		name := ""
		if info, ierr := p.Info(); ierr == nil {
			name = info.Name
			// The whole name, from BTF: the kernel's keeps 15 characters
			// ("on_hrtimer_expi" for both ends of a timer callback).
			if fi, ferr := info.FuncInfos(); ferr == nil && len(fi) > 0 && fi[0].Func != nil {
				name = fi[0].Func.Name
			}
		}
		p.Close()
		if err != nil {
			continue
		}
		out[id] = ProgStat{ID: id, Name: name, Runtime: uint64(st.Runtime), Count: st.RunCount, Misses: st.RecursionMisses}
	}
	return out
}

// Delta is b - a, per program, sorted by total run time (largest first).
func Delta(a, b map[uint32]ProgStat) []ProgStat {
	var out []ProgStat
	for id, y := range b {
		x := a[id]
		out = append(out, ProgStat{ID: id, Name: y.Name, Runtime: y.Runtime - x.Runtime,
			Count: y.Count - x.Count, Misses: y.Misses - x.Misses})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Runtime > out[j].Runtime })
	return out
}

// Sum adds up the deltas: total run time and invocations.
func Sum(d []ProgStat) (runtime, count, misses uint64) {
	for _, p := range d {
		runtime += p.Runtime
		count += p.Count
		misses += p.Misses
	}
	return
}

// MapDetail describes one map for the memory table.
type MapDetail struct {
	ID      uint32
	Name    string
	Type    ebpf.MapType
	Memlock int
	PerCPU  bool // its size scales with the number of CPUs
}

// MapDetails names the maps of o; perCPUByName marks maps that are sized per
// CPU by their user (rtscope's flight recorder).
func MapDetails(o *Objects, perCPUByName map[string]bool) []MapDetail {
	var out []MapDetail
	for id, ml := range o.Maps {
		d := MapDetail{ID: id, Memlock: ml}
		if m, err := ebpf.NewMapFromID(ebpf.MapID(id)); err == nil {
			if info, err := m.Info(); err == nil {
				d.Name = info.Name
				d.Type = info.Type
			}
			m.Close()
		}
		switch d.Type {
		case ebpf.PerCPUArray, ebpf.PerCPUHash, ebpf.LRUCPUHash, ebpf.PerCPUCGroupStorage:
			d.PerCPU = true
		}
		if perCPUByName[d.Name] {
			d.PerCPU = true
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Memlock > out[j].Memlock })
	return out
}

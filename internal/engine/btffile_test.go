package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// miniKernel writes a raw BTF file with a task_struct of size bytes and
// the sched_switch attach point, after pad unrelated types (which shift
// every later type ID, as another build's BTF does), and returns its path.
func miniKernel(t *testing.T, pad int, size uint32) string {
	t.Helper()
	b, err := btf.NewBuilder(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pad {
		if _, err := b.Add(&btf.Int{Name: "pad" + string(rune('a'+i)), Size: 4}); err != nil {
			t.Fatal(err)
		}
	}
	task := &btf.Struct{Name: "task_struct", Size: size}
	proto := &btf.FuncProto{Return: &btf.Void{}, Params: []btf.FuncParam{{Name: "p", Type: &btf.Pointer{Target: task}}}}
	if _, err := b.Add(&btf.Typedef{Name: "btf_trace_sched_switch", Type: &btf.Pointer{Target: proto}}); err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vmlinux.btf")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func specOf(t *testing.T, path string) *btf.Spec {
	t.Helper()
	s, err := readBTFFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Another build's BTF numbers the attach points otherwise, or lays the
// structures out otherwise: refused, naming the type; the same BTF passes.
func TestSameKernel(t *testing.T) {
	ref := specOf(t, miniKernel(t, 0, 9000))
	if err := sameKernel(ref, specOf(t, miniKernel(t, 0, 9000))); err != nil {
		t.Errorf("same types: %v", err)
	}
	err := sameKernel(specOf(t, miniKernel(t, 3, 9000)), ref)
	if err == nil || !strings.Contains(err.Error(), "btf_trace_sched_switch is type 4 in the file, 1 in the kernel") {
		t.Errorf("shifted IDs: %v", err)
	}
	err = sameKernel(specOf(t, miniKernel(t, 0, 9100)), ref)
	if err == nil || !strings.Contains(err.Error(), "task_struct is 9100 bytes in the file, 9000 in the kernel") {
		t.Errorf("another layout: %v", err)
	}
}

// Each file that cannot be this kernel's BTF is refused in one sentence
// naming the flag and the file.
func TestReadBTFFileErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, bytes.Repeat([]byte{0x5a}, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	// A BTF that is not a kernel's: one lone int.
	b, _ := btf.NewBuilder([]btf.Type{&btf.Int{Name: "int", Size: 4}}, nil)
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	notKernel := filepath.Join(dir, "prog.btf")
	if err := os.WriteFile(notKernel, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.btf")
	full, err := os.ReadFile(miniKernel(t, 0, 9000))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truncated, full[:len(full)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "missing: no such file"},
		{junk, "is not a BTF file"},
		{truncated, "is not a BTF file"},
		{notKernel, "is not a vmlinux BTF"},
		{filepath.Join(dir, "6.1.0-rpi.btf.tar.xz"), "is compressed: extract it first"},
		{dir, "is a directory"},
	} {
		_, err := readBTFFile(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "--btf "+c.path) ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", filepath.Base(c.path), err, c.want)
		}
	}
}

// --btf forces the BTF engine and cannot go with --engine classic.
func TestChooseEngineBTFFile(t *testing.T) {
	for _, want := range []string{EngineAuto, EngineBTF} {
		back, why, err := chooseEngine(want, "/x.btf")
		if err != nil || back.kind() != EngineBTF || !strings.Contains(why, "--btf /x.btf") {
			t.Errorf("%q: %v %q %v", want, back, why, err)
		}
	}
	if _, _, err := chooseEngine(EngineClassic, "/x.btf"); err == nil || !strings.Contains(err.Error(), "--engine classic") {
		t.Errorf("classic with --btf: %v", err)
	}
}

// A copy of this kernel's own BTF is accepted and compared with the
// kernel's (read through the bpf syscall); the loaded engine's probes and
// CO-RE use it (root).
func TestLoadBTFFileCopy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (the kernel's BTF is read through the bpf syscall); CI runs as root")
	}
	if KernelBTF() != nil {
		t.Fatal("no kernel BTF on this machine to copy; CI has it")
	}
	raw, err := os.ReadFile(kernelBTFPath)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vmlinux.btf")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if !KernelHasBTF() {
		t.Fatal("KernelHasBTF: false on a kernel with /sys/kernel/btf/vmlinux")
	}
	kt, err := LoadBTFFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if kt.Options().Programs.KernelTypes == nil || kt.Options().Cache == nil {
		t.Error("the file's types are not in the load options")
	}
	// The kernel's own BTF is not a BTF of another kernel than itself,
	// and a mini kernel's is.
	own, err := ownKernelBTF()
	if err != nil {
		t.Fatal(err)
	}
	if err := sameKernel(kt.spec, own); err != nil {
		t.Error(err)
	}
	if _, err := LoadBTFFile(miniKernel(t, 0, 9000)); err == nil || !strings.Contains(err.Error(), "is not the BTF of the running kernel") {
		t.Errorf("mini kernel: %v", err)
	}
	e, err := Load(Config{BTFFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Features.Engine != EngineBTF || !strings.Contains(e.Features.EngineNote, path) {
		t.Errorf("engine %s (%s)", e.Features.Engine, e.Features.EngineNote)
	}
	if err := e.Attach(); err != nil {
		t.Fatal(err)
	}
}

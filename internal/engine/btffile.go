package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// kernelBTFPath is where the kernel exposes its own BTF (CONFIG_DEBUG_INFO_BTF).
const kernelBTFPath = "/sys/kernel/btf/vmlinux"

// KernelTypes are the kernel's types read from a file (--btf FILE), for
// a kernel that has BTF of its own but does not show it at
// /sys/kernel/btf/vmlinux (a container without sysfs, a masked file). The
// kernel itself must have BTF: its verifier resolves tp_btf attach points,
// task_struct pointers, task storage and the task iterator against its own
// BTF, which no file replaces (a kernel without it refuses tp_btf programs
// with EINVAL); there the classic engine runs. Read-only after LoadBTFFile:
// safe for concurrent use.
type KernelTypes struct {
	Path  string
	spec  *btf.Spec  // CO-RE relocations and rtscope's own probes
	cache *btf.Cache // attach points, primed from the file
}

// Options returns the collection options that make a load use these types
// (the zero options when kt is nil: kernel BTF from sysfs).
func (kt *KernelTypes) Options() ebpf.CollectionOptions {
	if kt == nil {
		return ebpf.CollectionOptions{}
	}
	return ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: kt.spec}, Cache: kt.cache}
}

// btfAnchors are types whose type ID in a file must equal the running
// kernel's: the attach points of the BTF engine (tp_btf resolves them by
// ID) and the structures its CO-RE reads most. Two builds that differ
// anywhere before them number them differently.
var btfAnchors = []string{"btf_trace_sched_switch", "btf_trace_sched_waking", "btf_trace_hrtimer_start",
	"btf_trace_irq_handler_entry", "btf_trace_softirq_entry", "bpf_iter_task", "task_struct", "rq"}

// LoadBTFFile reads path as the running kernel's BTF: raw BTF (as BTFHub
// ships it, once extracted) or an ELF vmlinux with a .BTF section. It
// refuses, in one sentence, a missing file, a file that is not BTF or not
// a kernel's, a kernel without BTF of its own, and the BTF of another
// kernel release or build (compared with the kernel's own BTF, read
// through the bpf syscall).
func LoadBTFFile(path string) (*KernelTypes, error) {
	spec, err := readBTFFile(path)
	if err != nil {
		return nil, err
	}
	own, err := ownKernelBTF()
	switch {
	case errors.Is(err, errNoKernelBTF):
		return nil, fmt.Errorf("--btf %s: this kernel has no BTF of its own (CONFIG_DEBUG_INFO_BTF is off), which its verifier needs for the BTF engine's tp_btf programs and task storage whatever file is given: run without --btf (the classic engine)", path)
	case err == nil:
		if err := sameKernel(spec, own); err != nil {
			return nil, fmt.Errorf("--btf %s is not the BTF of the running kernel %s (another release or build): %w", path, kernelRelease(), err)
		}
	}
	// Otherwise the kernel's BTF could not be read to compare (no
	// CAP_SYS_ADMIN): the load checks what it can.
	cache, err := primeCache(path)
	if err != nil {
		return nil, fmt.Errorf("--btf %s: %w", path, err)
	}
	return &KernelTypes{Path: path, spec: spec, cache: cache}, nil
}

// readBTFFile loads and checks that path holds a kernel's types.
func readBTFFile(path string) (*btf.Spec, error) {
	if strings.HasSuffix(path, ".tar.xz") || strings.HasSuffix(path, ".xz") {
		return nil, fmt.Errorf("--btf %s is compressed: extract it first (tar xJf %s)", path, filepath.Base(path))
	}
	spec, err := btf.LoadSpec(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--btf %s: no such file", path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("--btf %s: %w", path, pe.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("--btf %s is not a BTF file (raw BTF, or an ELF vmlinux with a .BTF section): %w", path, err)
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_sched_switch", &td); err != nil {
		return nil, fmt.Errorf("--btf %s holds no kernel types (no btf_trace_sched_switch): it is not a vmlinux BTF", path)
	}
	return spec, nil
}

// errNoKernelBTF: the kernel has no vmlinux BTF object.
var errNoKernelBTF = errors.New("the kernel has no BTF")

// ownKernelBTF reads the kernel's own BTF through the bpf syscall (it
// needs CAP_SYS_ADMIN; /sys/kernel/btf/vmlinux may be hidden).
func ownKernelBTF() (*btf.Spec, error) {
	it := new(btf.HandleIterator)
	defer it.Handle.Close() //nolint:errcheck // BTF handle
	for it.Next() {
		info, err := it.Handle.Info()
		if err != nil {
			return nil, err
		}
		if info.IsVmlinux() {
			return it.Handle.Spec(nil)
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return nil, errNoKernelBTF
}

// KernelHasBTF tells whether the running kernel has BTF of its own, even
// where /sys/kernel/btf/vmlinux does not show it: then --btf FILE runs the
// full engine. Unknown (no CAP_SYS_ADMIN) counts as no.
func KernelHasBTF() bool {
	it := new(btf.HandleIterator)
	defer it.Handle.Close() //nolint:errcheck // BTF handle
	for it.Next() {
		if info, err := it.Handle.Info(); err == nil && info.IsVmlinux() {
			return true
		}
	}
	return false
}

// sameKernel says where file's types differ from the kernel's own: the
// anchors' type IDs and sizes.
func sameKernel(file, kernel *btf.Spec) error {
	for _, name := range btfAnchors {
		kt, kerr := kernel.AnyTypeByName(name)
		ft, ferr := file.AnyTypeByName(name)
		if kerr != nil && ferr != nil {
			continue // neither has it (an optional attach point)
		}
		if kerr != nil || ferr != nil {
			return fmt.Errorf("%s is in only one of them", name)
		}
		kid, _ := kernel.TypeID(kt)
		fid, _ := file.TypeID(ft)
		if kid != fid {
			return fmt.Errorf("%s is type %d in the file, %d in the kernel", name, fid, kid)
		}
		ksize, _ := btf.Sizeof(kt)
		fsize, _ := btf.Sizeof(ft)
		if ksize != fsize {
			return fmt.Errorf("%s is %d bytes in the file, %d in the kernel", name, fsize, ksize)
		}
	}
	return nil
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// primeCache returns a BTF cache holding the kernel's types for attach
// points. cilium/ebpf resolves a tp_btf program's attach point with the
// kernel BTF it finds itself (/sys/kernel/btf/vmlinux, then libbpf's
// /boot/vmlinux-RELEASE and kin), never with ProgramOptions.KernelTypes;
// where it finds none, the file is shown at /sys/kernel/btf/vmlinux in a
// private mount namespace of one locked thread, only while the cache
// reads it. The thread is never unlocked, so it ends with its goroutine
// and its namespace with it: no other thread of rtscope, and no other
// process, sees the mount (nor does a thread started meanwhile: the Go
// runtime clones new threads from its template thread, never from a
// locked one). Unsharing needs CAP_SYS_ADMIN.
func primeCache(path string) (*btf.Cache, error) {
	c := btf.NewCache()
	if _, err := c.Kernel(); err == nil {
		return c, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		done <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("private mount namespace: %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return fmt.Errorf("private mount namespace: %w", err)
			}
			if err := showAt(abs, kernelBTFPath); err != nil {
				return fmt.Errorf("showing the file at %s: %w", kernelBTFPath, err)
			}
			if _, err := c.Kernel(); err != nil {
				return fmt.Errorf("reading it as kernel BTF: %w", err)
			}
			return nil
		}()
	}()
	return c, <-done
}

// showAt makes file appear at target in this thread's mount namespace: a
// bind mount over target when it exists, else over a file in a tmpfs
// mounted on target's deepest existing directory below /sys (never on /:
// that would hide the file itself).
func showAt(file, target string) error {
	if _, err := os.Stat(target); err == nil {
		return unix.Mount(file, target, "", unix.MS_BIND, "")
	}
	dir := filepath.Dir(target)
	for ; dir != "/"; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil {
			break
		}
	}
	if dir == "/" {
		return errors.New("no /sys directory to mount on")
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755,size=1m"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.Create(target)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return unix.Mount(file, target, "", unix.MS_BIND, "")
}

// kernelSpec is the kernel's types for rtscope's own probes: the file's
// with --btf, else the kernel's, from the cache the loads share (read
// only: the probes look types up).
func (e *Engine) kernelSpec() (*btf.Spec, error) {
	if e.types != nil {
		return e.types.spec, nil
	}
	return e.btfCache.Kernel()
}

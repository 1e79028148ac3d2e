package engine

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Attach attaches every loaded program. Links die with the process: nothing
// stays attached after exit, even after SIGKILL. An optional program that
// loads but cannot attach (arm64 kernels without BPF trampolines) costs its
// feature only.
func (e *Engine) Attach() error { return e.back.attach(e) }

// attachTracing attaches every tp_btf/fentry/fexit program of c, all or
// none, in name order (one order on every run).
func attachTracing(c *ebpf.Collection) ([]link.Link, error) {
	names := make([]string, 0, len(c.Programs))
	for name := range c.Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	var links []link.Link
	for _, name := range names {
		l, err := link.AttachTracing(link.TracingOptions{Program: c.Programs[name]})
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			return nil, fmt.Errorf("attaching %s: %w", name, err)
		}
		links = append(links, l)
	}
	return links, nil
}

// Detach stops the programs; the maps stay readable until Close, so that
// the last notices, windows and statistics of a run can be read while
// nothing overwrites them. It then settles what the tracked tasks still
// hold (settleHeld), so that those statistics are complete; a second call
// does nothing. Not safe for concurrent use with Attach or Close.
func (e *Engine) Detach() error {
	if !e.closeLinks() {
		return nil
	}
	return e.settleHeld()
}

// closeLinks stops the programs; it says whether any was attached.
func (e *Engine) closeLinks() bool {
	attached := len(e.links) > 0
	for _, l := range e.links {
		l.Close()
	}
	e.links = nil
	return attached
}

// settleHeld records into their statistics the samples that tracked tasks
// took on their way to a CPU and hold until they leave it (hold_samples in
// maps.bpf.h): those of a task still on its CPU at the end of a run.
// Without bpf_for_each_map_elem the classic engine holds none.
func (e *Engine) settleHeld() error {
	if e.objs.SettleHeld != nil { // the BTF engine: over every task
		if err := runTaskIter(e.objs.SettleHeld, nil); err != nil {
			return fmt.Errorf("settling held samples: %w", err)
		}
		return nil
	}
	if e.reapply == nil || e.reapply.Programs["settle_held"] == nil {
		return nil
	}
	if _, err := e.reapply.Programs["settle_held"].Run(&ebpf.RunOptions{}); err != nil {
		return fmt.Errorf("settling held samples: %w", err)
	}
	return nil
}

// Close detaches and frees everything.
func (e *Engine) Close() {
	e.closeLinks() // nothing to settle: the statistics are about to be freed
	if e.notices != nil {
		e.notices.Close()
	}
	if e.flight != nil {
		_ = unix.Munmap(e.flight) // at close: nothing to do about a failure
		e.flight = nil
	}
	if e.core != nil {
		e.core.Close()
		e.core = nil
	}
	for _, c := range e.optional {
		c.Close()
	}
	e.optional = nil
	if e.reapply != nil {
		e.reapply.Close()
		e.reapply = nil
	}
	// Assign moved the task iterator and the maps out of their collection,
	// whose Close no longer reaches them: without this they stayed loaded
	// until the garbage collector ran (10 -> 50 fds after one
	// Load/Attach/Close; demo runs several engines in one process).
	closeObjects(&e.objs)
	e.objs.bpfMaps.Close() //nolint:errcheck // BPF objects: closing frees them whatever close returns
}

// closeObjects closes every exported *ebpf.Program and *ebpf.Map field of
// the struct v points to (closing twice is harmless).
func closeObjects(v any) {
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if !f.CanInterface() {
			continue // unexported, e.g. the embedded generated maps: closed by their own Close
		}
		switch x := f.Interface().(type) {
		case *ebpf.Program:
			if x != nil {
				x.Close()
			}
		case *ebpf.Map:
			if x != nil {
				x.Close()
			}
		}
	}
}

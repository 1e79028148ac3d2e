package doctor

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The BPF section has the engine's check, then one check per feature in
// the order given: PASS found, INFO a fallback, FAIL a required one
// missing, SKIP not probed; evidence and remedy from the feature's own
// sentences.
func TestBPFChecks(t *testing.T) {
	b := &BPF{Engine: "btf", Features: []Feature{
		{Name: "ringbuf", Needs: "BPF ring buffer", Enables: "the notices", Required: true, Probed: true, Found: true},
		{Name: "fexit", Needs: "fexit", Fallback: "the rseq tracepoint", Probed: true, Sentence: "fexit is not allowed", Cause: "EPERM"},
		{Name: "task_storage", Needs: "BPF task storage", Required: true, Probed: true, Sentence: "this kernel lacks task storage"},
		{Name: "kallsyms", Needs: "kernel addresses"},
	}}
	cs := bpfChecks(b)
	want := []struct {
		name     string
		status   Status
		evidence string
		remedy   string
	}{
		{"bpf_engine", Pass, "the btf engine loads and attaches", ""},
		{"bpf_ringbuf", Pass, "BPF ring buffer: the notices", ""},
		{"bpf_fexit", Info, "fexit is not allowed (EPERM)", "without it: the rseq tracepoint"},
		{"bpf_task_storage", Fail, "this kernel lacks task storage", "a kernel with BPF task storage"},
		{"bpf_kallsyms", Skip, "kernel addresses: not probed (the engine stopped before)", ""},
	}
	if len(cs) != len(want) {
		t.Fatalf("%d checks, want %d", len(cs), len(want))
	}
	for i, w := range want {
		if c := cs[i]; c.Name != w.name || c.Status != w.status || c.Evidence != w.evidence || c.Remedy != w.remedy {
			t.Errorf("check %d: %+v, want %+v", i, c, w)
		}
	}
	b.Err = "this kernel lacks the BPF ring buffer"
	if c := bpfChecks(b)[0]; c.Status != Fail || !strings.Contains(c.Evidence, "ring buffer") || c.Remedy == "" {
		t.Errorf("engine not loaded: %+v", c)
	}
	// Without root nothing is probed: one SKIP, the machine not failed.
	if cs := bpfChecks(&BPF{Unprobed: "rtscope needs root"}); len(cs) != 1 || cs[0].Status != Skip || !strings.Contains(cs[0].Evidence, "needs root") {
		t.Errorf("unprobed: %+v", cs)
	}
	b.Err = ""
	b.Engine, b.Note = "classic", "no usable kernel BTF"
	if c := bpfChecks(b)[0]; c.Status != Info || !strings.Contains(c.Evidence, "classic engine loads and attaches: no usable kernel BTF") {
		t.Errorf("classic: %+v", c)
	}
}

// Run adds the BPF section after the system checks when given, and only then.
func TestRunBPFSection(t *testing.T) {
	fsys := fstest.MapFS{"proc/version": {Data: []byte("Linux version 6.18\n")}}
	without, err := Run(Env{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	with, err := Run(Env{FS: fsys, BPF: &BPF{Engine: "btf", Features: []Feature{{Name: "ringbuf", Probed: true, Found: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	if without.Get("bpf_engine") != nil || len(with.Checks) != len(without.Checks)+2 {
		t.Fatalf("checks: %d without BPF, %d with", len(without.Checks), len(with.Checks))
	}
	if n := len(with.Checks); with.Checks[n-2].Name != "bpf_engine" || with.Checks[n-1].Name != "bpf_ringbuf" || with.Summary.Pass != without.Summary.Pass+2 {
		t.Errorf("BPF section: %s %s, %d pass", with.Checks[n-2].Name, with.Checks[n-1].Name, with.Summary.Pass)
	}
}

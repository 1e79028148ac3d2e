package engine

import (
	"errors"
	"strings"
	"testing"
)

// Every row of the table has what doctor, the JSON features and the docs
// show: a name, what the kernel needs, a probe, what it enables, a
// fallback and the one sentence shown when it is missing.
func TestFeatureTableComplete(t *testing.T) {
	names := map[string]bool{}
	for _, row := range FeatureTable() {
		for field, v := range map[string]string{"name": row.Name, "needs": row.Needs, "probe": row.Probe,
			"enables": row.Enables, "fallback": row.Fallback, "missing": row.Missing} {
			if strings.TrimSpace(v) == "" {
				t.Errorf("feature %d (%s) has no %s", row.Feature, row.Name, field)
			}
		}
		if names[row.Name] {
			t.Errorf("two features named %s", row.Name)
		}
		names[row.Name] = true
		if row.Feature.String() != row.Name {
			t.Errorf("feature %d: String %q, name %q", row.Feature, row.Feature, row.Name)
		}
		// One sentence each: no full stop inside (the JSON and doctor
		// show it as it is).
		for _, s := range []string{row.Missing, row.Classic} {
			if strings.Contains(s, ". ") || strings.HasSuffix(s, ".") {
				t.Errorf("%s: %q is not one sentence without a full stop", row.Name, s)
			}
		}
	}
	if len(names) != int(featureCount) {
		t.Errorf("%d features named, %d in the table", len(names), featureCount)
	}
}

// Every optional program of the BTF engine, and the classic engine's
// optional tracepoint, belongs to a feature, which its failure costs.
func TestOptionalProgramsHaveAFeature(t *testing.T) {
	spec, err := loadBpf()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range optionalPrograms() {
		if spec.Programs[p] == nil {
			t.Errorf("feature program %s is not in rtscope.bpf.c", p)
		}
	}
	if f, ok := featureOf("on_rseq_update"); !ok || f != FeatureRseq {
		t.Errorf("on_rseq_update: %v %v", f, ok)
	}
	if _, ok := featureOf("on_sched_switch"); ok {
		t.Error("on_sched_switch is core, not optional")
	}
}

// What a kernel lacks is shown with the table's sentence, or with the
// classic engine's for the features only the BTF engine uses.
func TestFeaturesSentence(t *testing.T) {
	var f Features
	for x := range Feature(featureCount) {
		f.set(x, nil)
	}
	f.set(FeatureFexit, errors.New("EPERM"))
	f.derive()
	if f.Has(FeatureFexit) || !f.Has(FeatureRseq) || f.Sentence(FeatureFexit) != featureTable[FeatureFexit].missing {
		t.Errorf("btf without fexit: has %v, %q", f.Has(FeatureFexit), f.Sentence(FeatureFexit))
	}
	if f.UserReturn != nil || f.UserReturnFexit {
		t.Errorf("btf without fexit: user return %v, fexit %v", f.UserReturn, f.UserReturnFexit)
	}
	if f.Sentence(FeatureRseq) != "" || f.Describe(FeatureFentry) != featureTable[FeatureFentry].used {
		t.Errorf("present features: %q %q", f.Sentence(FeatureRseq), f.Describe(FeatureFentry))
	}
	f.set(FeatureKernelBTF, errors.New("forced by --engine classic"))
	f.derive()
	for x := range Feature(featureCount) {
		if c := featureTable[x].classic; c != "" && (f.Has(x) || f.Sentence(x) != c) {
			t.Errorf("classic: %s has %v, sentence %q", x, f.Has(x), f.Sentence(x))
		}
	}
	if f.EngineLimits() == nil || f.Steal.Method != featureTable[FeatureStealClock].classic {
		t.Errorf("classic: limits %v, steal %q", f.EngineLimits(), f.Steal.Method)
	}
}

// A feature's missing sentence is the error derived from it, with the
// kernel's own error when there is more to say.
func TestFeaturesDerivedErrors(t *testing.T) {
	var f Features
	f.set(FeatureKernelBTF, nil)
	f.set(FeaturePercpuLookup, missingFeature(FeaturePercpuLookup))
	f.set(FeatureForEachMapElem, errors.New("invalid argument"))
	f.set(FeatureCgroupAttach, &attachError{errors.New("no trampoline")})
	f.derive()
	if f.WaiterStacks == nil || f.WaiterStacks.Error() != featureTable[FeaturePercpuLookup].missing {
		t.Errorf("waiter stacks: %v", f.WaiterStacks)
	}
	if f.SLOReapply == nil || f.SLOReapply.Error() != featureTable[FeatureForEachMapElem].missing+" (invalid argument)" {
		t.Errorf("reapply: %v", f.SLOReapply)
	}
	if f.CgroupAttach == nil || f.CgroupAttach.Error() != "no trampoline" {
		t.Errorf("cgroup attach: %v", f.CgroupAttach)
	}
}

// ProbeFeatures runs every probe of the table once, on this kernel, for
// either engine: each feature is probed, and the required ones found
// (the engine loaded).
func TestProbeFeatures(t *testing.T) {
	if err := Probe(); err != nil {
		t.Fatal(err) // CI runs as root with BPF: a missing one is a failure
	}
	for _, kind := range []string{EngineBTF, EngineClassic} {
		if kind == EngineBTF && KernelBTF() != nil {
			continue
		}
		f, err := ProbeFeatures(Config{Engine: kind})
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if f.Engine != kind || f.Has(FeatureKernelBTF) != (kind == EngineBTF) || !f.Has(FeatureRingBuf) {
			t.Errorf("%s: engine %s, kernel BTF %v, ring buffer %v", kind, f.Engine, f.Has(FeatureKernelBTF), f.Has(FeatureRingBuf))
		}
		for x := range Feature(featureCount) {
			if !f.Probed(x) {
				t.Errorf("%s: %s not probed", kind, x)
			}
			if !f.Has(x) && f.Sentence(x) == "" {
				t.Errorf("%s: %s missing without a sentence", kind, x)
			}
		}
	}
}

package report

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// kernelFeatures builds the features an engine of kind would find on a
// kernel that lacks missing.
func kernelFeatures(kind string, missing ...engine.Feature) *engine.Features {
	f := &engine.Features{Engine: kind}
	for _, row := range engine.FeatureTable() {
		var err error
		if slices.Contains(missing, row.Feature) {
			err = errors.New("refused")
		}
		f.Record(row.Feature, err)
	}
	return f
}

// The JSON features say what watch's report said before they came from
// the table (the sentences are frozen: scripts read them), and each
// sentence about a feature is the table's.
func TestFeaturesFrom(t *testing.T) {
	const (
		exact      = "exact (fentry/fexit on the threaded handler)"
		noFentry   = "on-CPU time of each irq/N thread activation (fentry is not allowed on this kernel)"
		classicIRQ = "on-CPU time of each irq/N thread activation (the classic engine has no fentry)"
		noFexit    = "only for threads with a registered rseq area (glibc >= 2.35): fexit is not allowed on this kernel"
		classicRet = "only for threads with a registered rseq area (glibc >= 2.35): the classic engine has no fexit"
		noPercpu   = "this kernel lacks bpf_map_lookup_percpu_elem (Linux 5.19): the stack of what runs while a tracked task waits is not sampled"
	)
	for _, c := range []struct {
		name                      string
		f                         *engine.Features
		trace                     bool
		handler, userRet, waiters string
		limits                    bool
	}{
		{"btf", kernelFeatures(engine.EngineBTF), true, exact, "", "", false},
		{"btf without fentry, fexit", kernelFeatures(engine.EngineBTF, engine.FeatureFentry, engine.FeatureFexit), true, noFentry, noFexit, "", false},
		{"btf without percpu lookup", kernelFeatures(engine.EngineBTF, engine.FeaturePercpuLookup), true, exact, "", noPercpu + " (refused)", false},
		{"btf without percpu lookup, no trace", kernelFeatures(engine.EngineBTF, engine.FeaturePercpuLookup), false, exact, "", "", false},
		{"btf without fexit nor rseq", kernelFeatures(engine.EngineBTF, engine.FeatureFexit, engine.FeatureRseq), true, exact,
			"unavailable: neither fexit on hrtimer_nanosleep (refused) nor the rseq_update tracepoint (refused) can be used", "", false},
		{"classic", kernelFeatures(engine.EngineClassic, engine.FeatureKernelBTF), true, classicIRQ, classicRet, "", true},
		{"classic without rseq", kernelFeatures(engine.EngineClassic, engine.FeatureKernelBTF, engine.FeatureRseq), true, classicIRQ, "unavailable: refused", "", true},
	} {
		got := FeaturesFrom(c.f, c.trace)
		if got.ThreadedIRQ != c.handler || got.UserReturn != c.userRet || got.WaiterStacks != c.waiters ||
			(got.EngineLimits != nil) != c.limits || got.Engine != c.f.Engine || got.Trace != c.trace {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
	// The sentences are the table's.
	var table strings.Builder
	for _, row := range engine.FeatureTable() {
		table.WriteString(row.Missing + "\n" + row.Classic + "\n")
	}
	for _, s := range []string{noFentry, classicIRQ, noFexit, classicRet, noPercpu} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("%q is not in the feature table", s)
		}
	}
	if got := FeaturesFrom(kernelFeatures(engine.EngineClassic, engine.FeatureKernelBTF), false); !slices.Equal(got.EngineLimits, engine.ClassicLimits) {
		t.Errorf("classic limits %q", got.EngineLimits)
	}
}

// The inlined variant (kernels before 5.12) is named in the features, with
// the table's sentence, for either engine; the global one is not.
func TestFeaturesSubprograms(t *testing.T) {
	for _, kind := range []string{engine.EngineBTF, engine.EngineClassic} {
		if got := FeaturesFrom(kernelFeatures(kind), true).Subprograms; got != "" {
			t.Errorf("%s with global functions: subprograms %q", kind, got)
		}
		want := engine.FeatureTable()[engine.FeatureGlobalPtrArgs].Missing
		if got := FeaturesFrom(kernelFeatures(kind, engine.FeatureGlobalPtrArgs), true).Subprograms; got != want || got == "" {
			t.Errorf("%s, inlined: subprograms %q, want %q", kind, got, want)
		}
	}
	if got := FeaturesFrom(&engine.Features{}, true).Subprograms; got != "" {
		t.Errorf("not probed: subprograms %q", got)
	}
}

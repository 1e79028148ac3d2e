package doctor

import "fmt"

// BPF is what rtscope's engine found of the kernel's BPF features, for
// doctor's BPF section: one check per row of the engine's feature table
// (engine.FeatureTable, the one home of their sentences; cli fills this
// from it). Nil in Env: not probed (--bpf=false).
type BPF struct {
	Engine string // the engine that would run: "btf" or "classic"
	Note   string // why the classic one runs, or where the BTF came from
	// Err is why the engine could not be loaded ("" when it was): a
	// required feature missing, a refusal of the kernel.
	Err string
	// Unprobed is why nothing was probed (no root nor CAP_BPF): the
	// section is one SKIP, not a failure of the machine.
	Unprobed string
	Features []Feature
}

// Feature is one row of the engine's feature table and what its probe
// found.
type Feature struct {
	Name     string // bpf_<Name> is the check's name
	Needs    string // what the kernel must have
	Enables  string // what it gives
	Fallback string // what rtscope does without it
	Required bool   // the engine does not start without it
	Probed   bool   // the probe ran (a failed load stops before some)
	Found    bool
	Sentence string // the one sentence shown when not found
	Cause    string // the kernel's own error, when it says more than the sentence
}

// bpfChecks are the BPF section: the engine, then each feature.
func bpfChecks(b *BPF) []Check {
	engine := Check{Name: "bpf_engine", Status: Pass, Data: map[string]any{"engine": b.Engine}}
	switch {
	case b.Unprobed != "":
		engine.Status, engine.Evidence = Skip, "rtscope's BPF features not probed: "+b.Unprobed
		return []Check{engine}
	case b.Err != "":
		engine.Status, engine.Evidence = Fail, "rtscope's engine cannot load: "+b.Err
		engine.Remedy = "the failed checks below name what the kernel lacks"
	case b.Note != "":
		engine.Status, engine.Evidence = Info, fmt.Sprintf("the %s engine loads and attaches: %s", b.Engine, b.Note)
	default:
		engine.Evidence = fmt.Sprintf("the %s engine loads and attaches", b.Engine)
	}
	out := []Check{engine}
	for _, f := range b.Features {
		out = append(out, featureCheck(f))
	}
	return out
}

// featureCheck says whether one feature was found: PASS, INFO when rtscope
// falls back without it, FAIL when the engine needs it, SKIP when its
// probe did not run.
func featureCheck(f Feature) Check {
	c := Check{Name: "bpf_" + f.Name, Data: map[string]any{"found": f.Found, "required": f.Required}}
	switch {
	case !f.Probed:
		c.Status, c.Evidence = Skip, f.Needs+": not probed (the engine stopped before)"
	case f.Found:
		c.Status, c.Evidence = Pass, f.Needs+": "+f.Enables
	default:
		c.Status, c.Evidence = Info, f.Sentence
		if f.Cause != "" {
			c.Evidence += " (" + f.Cause + ")"
		}
		c.Remedy = "without it: " + f.Fallback
		if f.Required {
			c.Status, c.Remedy = Fail, "a kernel with "+f.Needs
		}
	}
	return c
}

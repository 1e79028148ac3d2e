package report

import "github.com/rtscope/rtscope/internal/engine"

// FeaturesFrom is the JSON features of a run whose engine found f (trace:
// the flight recorder was on). Every sentence comes from the engine's
// table of kernel features (engine.FeatureTable) or from what its probes
// said.
func FeaturesFrom(f *engine.Features, trace bool) Features {
	out := Features{Trace: trace, Steal: f.Steal.Method, Engine: f.Engine, EngineNote: f.EngineNote,
		SleepReasons: f.SleepReasons, PageFaults: f.PageFaults, EngineLimits: f.EngineLimits(),
		ThreadedIRQ: f.Describe(engine.FeatureFentry)}
	switch {
	case f.UserReturn != nil:
		out.UserReturn = "unavailable: " + f.UserReturn.Error()
	case !f.UserReturnFexit:
		out.UserReturn = f.Sentence(engine.FeatureFexit) // only rseq threads
	}
	if f.WaiterStacks != nil && trace {
		out.WaiterStacks = f.WaiterStacks.Error()
	}
	if f.Probed(engine.FeatureGlobalPtrArgs) {
		out.Subprograms = f.Sentence(engine.FeatureGlobalPtrArgs)
	}
	if f.IPIAsked() { // --ipi: what of it this kernel lacks
		for _, x := range []engine.Feature{engine.FeatureIPISend, engine.FeatureIPIReceive} {
			if x == engine.FeatureIPIReceive && f.IPIReceipts() {
				continue // received through ipi:ipi_entry (arm64)
			}
			if s := f.Sentence(x); s != "" {
				out.IPI = append(out.IPI, s)
			}
		}
	}
	return out
}

package engine

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// variantSpec loads the engine's object in the variant this kernel
// verifies: global, whose shared subprograms are verified once (global),
// or the inlined one (-DRTS_INLINE_SUBPROGS, compat.bpf.h) where the
// verifier takes no pointer in a global function's arguments (before
// Linux 5.12). Both have the same programs, maps and variables, so the
// objects structs of either assign from it. It records the feature. The
// inlined variant loads in 0.8 s against 0.34 s (BTF engine), 1.5 s
// against 0.14 s (classic), here (TestInlinedVariantLoads).
func (e *Engine) variantSpec(global, inlined func() (*ebpf.CollectionSpec, error)) (*ebpf.CollectionSpec, error) {
	err := haveGlobalPtrArgs()
	if e.cfg.TestInlineVariant {
		err = missingFeature(FeatureGlobalPtrArgs)
	}
	e.Features.set(FeatureGlobalPtrArgs, err)
	if err != nil {
		return inlined()
	}
	return global()
}

// haveGlobalPtrArgs probes once a process whether the verifier takes a
// global function with a pointer argument (Linux 5.12, e5069b9c23b3):
// nil when it does, the feature's sentence with the verifier's refusal
// when not. An error other than the verifier's (EPERM, no memory) is
// inconclusive and counts as there: the engine's own load says more.
var haveGlobalPtrArgs = sync.OnceValue(func() error { return globalPtrArgs(loadGlobalPtrProbe()) })

// globalPtrArgs is the feature's state from the probe's load error.
func globalPtrArgs(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("%w (%v)", missingFeature(FeatureGlobalPtrArgs), err)
	}
	return nil
}

// loadGlobalPtrProbe loads globalPtrProbe and closes it.
func loadGlobalPtrProbe() error {
	prog, err := ebpf.NewProgram(globalPtrProbe())
	if err != nil {
		return err
	}
	return prog.Close()
}

// globalPtrProbe is a socket filter that passes a pointer to its stack to
// a global function, which reads through it: what the engines' rts_settle
// and rts_sleep_reason_of do with map values.
func globalPtrProbe() *ebpf.ProgramSpec {
	i32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	caller := &btf.Func{Name: "probe_main", Type: &btf.FuncProto{Return: i32}, Linkage: btf.GlobalFunc}
	callee := &btf.Func{Name: "probe_sub", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{
		Return: i32, Params: []btf.FuncParam{{Name: "p", Type: &btf.Pointer{Target: i32}}},
	}}
	insns := asm.Instructions{
		btf.WithFuncMetadata(asm.StoreImm(asm.R10, -8, 0, asm.Word), caller),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, -8),
		asm.Call.Label("probe_sub"),
		asm.Return(),
		btf.WithFuncMetadata(asm.Mov.Imm(asm.R0, 0), callee).WithSymbol("probe_sub"),
		asm.JEq.Imm(asm.R1, 0, "probe_out"), // a global function's pointer may be NULL
		asm.LoadMem(asm.R0, asm.R1, 0, asm.Word),
		asm.Return().WithSymbol("probe_out"),
	}
	return &ebpf.ProgramSpec{Name: "rts_probe_gptr", Type: ebpf.SocketFilter, License: "GPL", Instructions: insns}
}

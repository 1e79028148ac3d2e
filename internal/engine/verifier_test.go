package engine

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/tpformat"
)

// verifierBudget is the most instructions the verifier may walk through all
// of one engine's programs, at the settings Load gives them on this
// machine. Start-up is mostly verification: with the held-sample settle
// inlined at each call (20f5549) the tp_btf engine took 235,708
// (on_sched_switch alone 137,766, 0.36 s), against 142,063 for adab4fa;
// with rts_settle and rts_sleep_reason_of global, about 66,000.
const verifierBudget = 150_000

// verifierBudgetInlined is verifierBudget for the inlined variant, which
// kernels before 5.12 load (compat.bpf.h), verified again at every call:
// 328,496 instructions for the tp_btf engine, 633,310 for the classic one
// (its on_sched_switch 500,617 of the million a program may take), on
// Linux 6.18. 750,000 since the noise metric: its recording, inlined in
// the IRQ, softirq and timer entries there, took the classic one to 722,799
// (on_sched_switch 507,611) with the IPI hooks; 850,000 since the DEADLINE
// job functions, inlined too, took the tp_btf one to 768,044
// (on_sched_switch 633,323 of the million), 822,461 with rts_dl_waits,
// 872,442 (on_sched_switch 737,765) with the noise windows, the same count
// as CI's on this kernel; 826,920 (692,243) with retry_track a subprogram.
// The count is deterministic for one kernel and object: the margin is for
// other kernels.
const verifierBudgetInlined = 850_000

var (
	verifierProcessed = regexp.MustCompile(`processed (\d+) insns`)
	verifierTime      = regexp.MustCompile(`verification time (\d+) usec`)
)

// TestVerifierCost loads each program of both engines on its own with the
// verifier's statistics, logs what each cost (go test -v), and checks each
// engine's total against verifierBudget, and that of their inlined
// variants against verifierBudgetInlined.
func TestVerifierCost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF (CI runs as root)")
	}
	syms, _ := ksym.Kernel()
	vars := map[string]any{"hrtimer_wakeup_fn": syms.Addr("hrtimer_wakeup")}
	newSleepTable(syms).vars(vars)
	for _, v := range []struct {
		name         string
		btf, classic func() (*ebpf.CollectionSpec, error)
		budget       int
	}{
		{"", loadBpf, loadClassic, verifierBudget},
		{" inlined", loadBpfinline, loadClassicinline, verifierBudgetInlined},
	} {
		t.Run("btf"+v.name, func(t *testing.T) {
			spec, err := v.btf()
			if err != nil {
				t.Fatal(err)
			}
			verifierCost(t, spec, vars, v.budget)
		})
		t.Run("classic"+v.name, func(t *testing.T) { classicVerifierCost(t, v.classic, vars, v.budget) })
	}
}

// classicVerifierCost is verifierCost for the classic engine's spec, with
// this kernel's record layouts.
func classicVerifierCost(t *testing.T, load func() (*ebpf.CollectionSpec, error), vars map[string]any, budget int) {
	spec, err := load()
	if err != nil {
		t.Fatal(err)
	}
	// This kernel's record layouts (the verifier walks the record reads
	// they select), else the captured ones.
	offs, err := classicOffsets(tpformat.ReadFormat)
	if err != nil {
		t.Logf("captured tracepoint formats: %v", err)
		offs, err = classicOffsets(readCaptured(nil))
	}
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]any{}
	for k, v := range vars {
		all[k] = v
	}
	for k, v := range offs {
		all[k] = v
	}
	verifierCost(t, spec, all, budget)
}

// verifierLogs loads each program of spec alone with the verifier's
// statistics and returns their logs by name (the optional ones this kernel
// refuses are skipped).
func verifierLogs(t *testing.T, spec *ebpf.CollectionSpec, vars map[string]any) map[string]string {
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			t.Fatalf("setting %s: %v", name, err)
		}
	}
	logs := map[string]string{}
	for n := range spec.Programs {
		if n == "on_sched_switch_legacy" { // loaded instead of on_sched_switch before 5.18, its twin
			continue
		}
		sub := spec.Copy()
		sub.Programs = map[string]*ebpf.ProgramSpec{n: spec.Programs[n]}
		c, err := ebpf.NewCollectionWithOptions(sub, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("%s: %v", n, err) // refused by the verifier itself
		}
		if err != nil {
			t.Logf("%-28s not loaded here: %v", n, err) // an optional hook this kernel lacks
			continue
		}
		logs[n] = c.Programs[n].VerifierLog
		c.Close()
	}
	return logs
}

// verifierCost loads each program of spec alone and checks the total it
// took the verifier.
func verifierCost(t *testing.T, spec *ebpf.CollectionSpec, vars map[string]any, budget int) {
	logs := verifierLogs(t, spec, vars)
	names := slices.Sorted(maps.Keys(logs))
	total := 0
	for _, n := range names {
		log := logs[n]
		m, tm := verifierProcessed.FindStringSubmatch(log), verifierTime.FindStringSubmatch(log)
		if m == nil || tm == nil {
			t.Fatalf("%s: no statistics in the verifier log %q", n, log)
		}
		insns, _ := strconv.Atoi(m[1])
		total += insns
		t.Logf("%-28s %7d instructions verified in %6s us", n, insns, tm[1])
	}
	t.Logf("total %d instructions", total)
	if total > budget {
		t.Errorf("the verifier walked %d instructions through the programs, more than %d: each thousand takes start-up 1-3 ms longer here", total, budget)
	}
}

// stackBudget is the most stack the deepest call chain of a program may
// take, as Linux 6.1 adds it up (check_max_stack_depth: each function's
// depth rounded up to 32 bytes, at least 32) against its limit of 512
// (MAX_BPF_STACK). Kernels with private stacks for tracing programs (6.13)
// check each function alone, so only this test sees a chain grow: the
// QEMU rt guest (Debian 6.1) refused on_sched_switch at 544 bytes.
const stackBudget = 448

// TestVerifierStack checks that the deepest chain of calls of every
// program of both engines, in both variants, stays within stackBudget, as
// Linux 6.1 adds it up, from the objects themselves (stackDepths): what the
// verifier of a newer kernel finds depends on the code it proves dead.
func TestVerifierStack(t *testing.T) {
	for _, v := range []struct {
		name string
		load func() (*ebpf.CollectionSpec, error)
	}{{"btf", loadBpf}, {"btf inlined", loadBpfinline}, {"classic", loadClassic}, {"classic inlined", loadClassicinline}} {
		t.Run(v.name, func(t *testing.T) {
			spec, err := v.load()
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range slices.Sorted(maps.Keys(spec.Programs)) {
				depth, chain := deepestStack(spec.Programs[n].Instructions)
				t.Logf("%-32s %3d bytes: %s", n, depth, strings.Join(chain, " > "))
				if depth > stackBudget {
					t.Errorf("%s: its calls %s take %d bytes of stack, more than %d (Linux 6.1 refuses over 512)", n, strings.Join(chain, " > "), depth, stackBudget)
				}
			}
		})
	}
}

// deepestStack is the stack the deepest chain of calls of a program takes
// as Linux 6.1 counts it, and that chain (each function with its depth),
// from its flattened instructions. Each function's depth is the deepest
// stack slot its code reaches (stackDepths): the verifier's own "stack
// depth" statistics leave out the functions it found dead.
func deepestStack(insns asm.Instructions) (int, []string) {
	var funcs []string
	calls := map[string][]string{}
	for _, ins := range insns {
		if sym := ins.Symbol(); sym != "" {
			funcs = append(funcs, sym)
		}
		if len(funcs) > 0 && (ins.IsFunctionCall() || ins.IsLoadOfFunctionPointer()) {
			calls[funcs[len(funcs)-1]] = append(calls[funcs[len(funcs)-1]], ins.Reference())
		}
	}
	own := stackDepths(insns)
	var walk func(fn string) (int, []string)
	walk = func(fn string) (int, []string) {
		best, chain := 0, []string(nil)
		for _, c := range calls[fn] {
			if d, ch := walk(c); d > best {
				best, chain = d, ch
			}
		}
		d := (max(own[fn], 1) + 31) / 32 * 32
		return d + best, append([]string{fmt.Sprintf("%s %d", fn, own[fn])}, chain...)
	}
	return walk(funcs[0])
}

// stackDepths is the stack each function of insns uses: the lowest slot
// below its frame pointer (r10) it loads, stores, or takes the address of
// (clang's "rN = r10; rN += -off", then rN's own offsets).
func stackDepths(insns asm.Instructions) map[string]int {
	depths := map[string]int{}
	fn := ""
	var fp [asm.R10 + 1]int64 // each register's offset from r10, when it points to the stack
	var onStack [asm.R10 + 1]bool
	deeper := func(off int64) { depths[fn] = max(depths[fn], int(-off)) }
	for _, ins := range insns {
		if sym := ins.Symbol(); sym != "" {
			fn, onStack = sym, [asm.R10 + 1]bool{}
		}
		op := ins.OpCode
		switch {
		case op.Class() == asm.StXClass || op.Class() == asm.StClass:
			if ins.Dst == asm.R10 {
				deeper(int64(ins.Offset))
			} else if onStack[ins.Dst] {
				deeper(fp[ins.Dst] + int64(ins.Offset))
			}
			continue
		case op.Class() == asm.LdXClass && ins.Src == asm.R10:
			deeper(int64(ins.Offset))
		case op.Class() == asm.LdXClass && onStack[ins.Src]:
			deeper(fp[ins.Src] + int64(ins.Offset))
		case op.Class() == asm.ALU64Class && op.ALUOp() == asm.Mov && op.Source() == asm.RegSource && ins.Src == asm.R10:
			fp[ins.Dst], onStack[ins.Dst] = 0, true
			continue
		case op.Class() == asm.ALU64Class && op.ALUOp() == asm.Add && op.Source() == asm.ImmSource && onStack[ins.Dst]:
			fp[ins.Dst] += ins.Constant
			deeper(fp[ins.Dst])
			continue
		}
		if ins.Dst <= asm.R10 && (op.Class().IsALU() || op.Class() == asm.LdXClass || op.Class() == asm.LdClass) {
			onStack[ins.Dst] = false // overwritten
		}
	}
	return depths
}

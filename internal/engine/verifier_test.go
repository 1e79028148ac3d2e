package engine

import (
	"errors"
	"os"
	"regexp"
	"sort"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"

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
// (on_sched_switch 633,323 of the million), 822,461 with rts_dl_waits.
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

// verifierCost loads each program of spec alone (the optional ones this
// kernel refuses are skipped) and checks the total it took the verifier.
func verifierCost(t *testing.T, spec *ebpf.CollectionSpec, vars map[string]any, budget int) {
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			t.Fatalf("setting %s: %v", name, err)
		}
	}
	var names []string
	for n := range spec.Programs {
		if n != "on_sched_switch_legacy" { // loaded instead of on_sched_switch before 5.18, its twin
			names = append(names, n)
		}
	}
	sort.Strings(names)
	total := 0
	for _, n := range names {
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
		log := c.Programs[n].VerifierLog
		c.Close()
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

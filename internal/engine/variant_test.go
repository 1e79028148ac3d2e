package engine

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/metric"
)

var verifiedGlobal = regexp.MustCompile(`\('probe_sub'\) is (global|safe for any args)`)

// This kernel (5.12 or later) verifies global functions taking pointers,
// and the probe's callee is verified as a global function: the probe
// tests what it claims (a static callee would load before 5.12 too).
func TestGlobalPtrArgsProbe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF (CI runs as root)")
	}
	if err := loadGlobalPtrProbe(); err != nil {
		t.Fatalf("the probe does not load on a kernel with global pointer arguments: %v", err)
	}
	if err := haveGlobalPtrArgs(); err != nil {
		t.Fatalf("probe on a kernel with global pointer arguments: %v", err)
	}
	prog, err := ebpf.NewProgramWithOptions(globalPtrProbe(), ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	// "is global and assumed valid" on older kernels, "is safe for any
	// args that match its prototype" on newer ones.
	if log := prog.VerifierLog; !verifiedGlobal.MatchString(log) {
		t.Errorf("probe_sub was not verified as a global function:\n%s", log)
	}
}

// A verifier's refusal of the probe (as before 5.12) is the feature
// missing, with its sentence: here a pointer to void, whose size no
// kernel knows, stands for the pointer older kernels refuse.
func TestGlobalPtrArgsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF (CI runs as root)")
	}
	spec := globalPtrProbe()
	callee := btf.FuncMetadata(&spec.Instructions[5])
	if callee == nil || callee.Name != "probe_sub" {
		t.Fatalf("instruction 5 is not probe_sub's first: %v", callee)
	}
	callee.Type.(*btf.FuncProto).Params[0].Type = &btf.Pointer{Target: &btf.Void{}}
	_, loadErr := ebpf.NewProgram(spec)
	err := globalPtrArgs(loadErr)
	var missing *missingError
	if !errors.As(err, &missing) || missing.sentence != featureTable[FeatureGlobalPtrArgs].missing {
		t.Fatalf("a refused probe (%v) gave %v, want the feature's sentence", loadErr, err)
	}
	if globalPtrArgs(unix.EPERM) != nil {
		t.Error("an EPERM (inconclusive) counts as missing: the engine's own load should tell")
	}
}

// inlinedTwinsEnv set to 1 makes every twin load its inlined variant: the
// environment of the test binary TestTwinsInlined runs again.
const inlinedTwinsEnv = "RTSCOPE_TEST_INLINED_TWINS"

// inlinedTwins: the twins load their inlined variant (-DRTS_INLINE_SUBPROGS).
var inlinedTwins = os.Getenv(inlinedTwinsEnv) == "1"

// loadTwinVariant loads the twins' spec in the variant the run asks for.
func loadTwinVariant() (*ebpf.CollectionSpec, error) { return loadTwinOf(inlinedTwins) }

// loadTwinOf loads the twins' inlined variant, or their global one.
func loadTwinOf(inlined bool) (*ebpf.CollectionSpec, error) {
	if inlined {
		return loadTwininline()
	}
	return loadTwin()
}

// loadClassictwinVariant loads the classic twins' spec in the variant the
// run asks for.
func loadClassictwinVariant() (*ebpf.CollectionSpec, error) {
	if inlinedTwins {
		return loadClassictwininline()
	}
	return loadClassictwin()
}

// Every test that loads a twin passes with the twins' inlined variant too:
// the test binary runs them again with inlinedTwinsEnv set.
func TestTwinsInlined(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF (CI runs as root)")
	}
	if inlinedTwins {
		// Its child run selects the twin tests alone (-test.run below).
		t.Fatal("TestTwinsInlined ran inside its own child run")
	}
	names, err := testsCalling("loadTwinOf", "loadClassictwinVariant")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 40 {
		t.Fatalf("found %d tests loading twins, want the 40 or more there are: %v", len(names), names)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^("+strings.Join(names, "|")+")$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), inlinedTwinsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the twins' tests with the inlined variant: %v\n%s", err, out)
	}
	done := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		// A skipped twin test did not pass: only PASS counts.
		if rest, ok := strings.CutPrefix(line, "--- PASS: "); ok {
			done[strings.Fields(rest)[0]] = true
		}
	}
	for _, n := range names {
		if !done[n] {
			t.Errorf("%s did not pass with the inlined variant", n)
		}
	}
	t.Logf("%d tests passed with the twins' inlined variant", len(names))
}

// testsCalling names the package's tests that reach one of the functions
// roots (directly or through the package's test helpers), from the
// syntax of its test files.
func testsCalling(roots ...string) ([]string, error) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		return nil, err
	}
	uses := map[string]map[string]bool{} // function -> the functions it names
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			named := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					named[id.Name] = true
				}
				return true
			})
			uses[fn.Name.Name] = named
		}
	}
	reach := map[string]bool{}
	for _, r := range roots {
		reach[r] = true
	}
	for grew := true; grew; {
		grew = false
		for fn, named := range uses {
			for n := range named {
				if reach[n] && !reach[fn] {
					reach[fn], grew = true, true
				}
			}
		}
	}
	var out []string
	for fn := range reach {
		if strings.HasPrefix(fn, "Test") && fn != "TestTwinsInlined" && fn != "TestTwinVariantsAgree" {
			out = append(out, fn)
		}
	}
	sort.Strings(out)
	return out, nil
}

// The twins' two variants agree: the same seeded sequence of timer
// releases, wakeups, preemptions and returns to user space through three
// tasks leaves the same statistics in each, at every checkpoint (what the
// tasks hold, and then all settled). The inlined variant has no global
// function taking pointers; the other has them.
func TestTwinVariantsAgree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF (CI runs as root)")
	}
	for inlined, want := range map[bool]bool{false: true, true: false} {
		spec, err := loadTwinOf(inlined)
		if err != nil {
			t.Fatal(err)
		}
		if got := hasGlobalFunc(spec, "rts_settle_one"); got != want {
			t.Errorf("inlined %v: rts_settle_one global %v, want %v", inlined, got, want)
		}
	}
	global, inlined := twinSequence(t, false), twinSequence(t, true)
	for _, s := range global[len(global)-3:] {
		if s.Wakeups < 100 || s.TimerReleases < 50 || s.SwitchesPreempted == 0 {
			t.Errorf("task %d: wakeups %d, releases %d, preempted %d: the sequence did not take its paths",
				s.Tid, s.Wakeups, s.TimerReleases, s.SwitchesPreempted)
		}
	}
	if len(global) != len(inlined) {
		t.Fatalf("%d checkpoints, inlined %d", len(global), len(inlined))
	}
	for i := range global {
		if !reflect.DeepEqual(global[i], inlined[i]) {
			t.Errorf("checkpoint %d: the variants differ:\nglobal  %+v\ninlined %+v", i, global[i], inlined[i])
		}
	}
}

// hasGlobalFunc tells whether the spec's programs call name as a global
// function (BTF linkage).
func hasGlobalFunc(spec *ebpf.CollectionSpec, name string) bool {
	for _, p := range spec.Programs {
		for _, ins := range p.Instructions {
			if fn := btf.FuncMetadata(&ins); fn != nil && fn.Name == name && fn.Linkage == btf.GlobalFunc {
				return true
			}
		}
	}
	return false
}

// twinSequence runs a seeded sequence through one variant's twins and
// returns the tasks' statistics at each checkpoint.
func twinSequence(t *testing.T, inlined bool) []bpfRtsTaskStats {
	tw := newTwinOf(t, inlined, map[metric.ID]uint64{metric.Latency: 300}, noStartUp)
	rng := rand.New(rand.NewPCG(36, 37))
	tids := []uint32{100, 200, 300}
	for _, tid := range tids {
		tw.track(tid, true, false)
	}
	var out []bpfRtsTaskStats
	now := uint64(10_000)
	for step := range 600 {
		tid := tids[rng.IntN(len(tids))]
		expiry := now + uint64(rng.IntN(1000))
		wake := expiry + 1 + uint64(rng.IntN(50))
		if rng.IntN(4) == 0 {
			tw.wakeup(wake, 0, tid) // by a task
		} else {
			tw.timerWakeup(wake, 0, tid, expiry, wake-1)
		}
		now = wake + uint64(rng.IntN(400))
		tw.switchTo(now, 0, idle, tid, false, 0)
		now += 1 + uint64(rng.IntN(30))
		tw.run(tw.objs.TestUserReturn, now, 0, uint64(tid))
		if other := tids[rng.IntN(len(tids))]; other != tid && rng.IntN(3) == 0 {
			now += uint64(rng.IntN(200))
			tw.switchTo(now, 0, tid, other, false, 0) // preempted
			now += 1 + uint64(rng.IntN(200))
			tw.switchTo(now, 0, other, tid, false, 0)
		}
		now += uint64(rng.IntN(2000))
		tw.switchTo(now, 0, tid, idle, true, 0)
		if step%50 == 49 {
			for _, id := range tids {
				out = append(out, *tw.heldStats(tw.id(id)))
			}
		}
	}
	for _, id := range tids {
		out = append(out, *tw.kernelStats(tw.id(id)))
	}
	return out
}

// Both engines load and attach their inlined variant (TestInlineVariant,
// as on a kernel before 5.12), which says so in the features: its
// on_sched_switch, as the kernel has it, calls no global function but
// rts_sleep_fn_class (scalar argument), where the other calls
// rts_settle_one, rts_sleep_reason_of, rts_noise_record and
// rts_noise_switch too (and the tp_btf one the DEADLINE job functions).
func TestInlinedVariantLoads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF (CI runs as root)")
	}
	want := map[bool]string{false: "rts_noise_record rts_noise_switch rts_settle_one rts_sleep_fn_class rts_sleep_reason_of", true: "rts_sleep_fn_class"}
	// The tp_btf engine's on_sched_switch also calls the DEADLINE job
	// functions (deadline.bpf.h); the classic one has none (no entity).
	wantBTF := "rts_dl_record rts_dl_switch_in rts_dl_switch_out " + want[false]
	for _, kind := range []string{EngineBTF, EngineClassic} {
		if kind == EngineBTF && KernelBTF() != nil {
			continue
		}
		for _, inlined := range []bool{false, true} {
			start := time.Now()
			e, err := Load(Config{Engine: kind, Trace: true, FlightPerCPU: 64, TestInlineVariant: inlined})
			if err != nil {
				t.Fatalf("%s, inlined %v: %v", kind, inlined, err)
			}
			t.Logf("%s, inlined %v: loaded in %v", kind, inlined, time.Since(start).Round(time.Millisecond))
			if got := e.Features.Has(FeatureGlobalPtrArgs); got == inlined {
				t.Errorf("%s, inlined %v: global_ptr_args found %v", kind, inlined, got)
			}
			if s := e.Features.Sentence(FeatureGlobalPtrArgs); inlined != strings.Contains(s, "inlined variant") {
				t.Errorf("%s, inlined %v: sentence %q", kind, inlined, s)
			}
			w := want[inlined]
			if kind == EngineBTF && !inlined {
				w = wantBTF
			}
			if got := loadedGlobals(t, e, "on_sched_switch"); got != w {
				t.Errorf("%s, inlined %v: on_sched_switch's global functions %q, want %q", kind, inlined, got, w)
			}
			if err := e.Attach(); err != nil {
				t.Errorf("%s, inlined %v: attach: %v", kind, inlined, err)
			}
			e.Close()
		}
	}
}

// loadedGlobals names the global functions of the loaded program name
// (its legacy variant where that was loaded), sorted, from the kernel's
// function information.
func loadedGlobals(t *testing.T, e *Engine, name string) string {
	t.Helper()
	p := e.core.Programs[name]
	if p == nil {
		p = e.core.Programs[name+"_legacy"]
	}
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	funcs, err := info.FuncInfos()
	if err != nil {
		t.Fatalf("%s: reading the loaded function information: %v", name, err)
	}
	var out []string
	for _, f := range funcs {
		if f.Func.Linkage == btf.GlobalFunc && f.Func.Name != name && f.Func.Name != name+"_legacy" {
			out = append(out, f.Func.Name)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

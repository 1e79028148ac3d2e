package scenario

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/isolation"
)

// isolationOfScenario runs scenario name in a child process and watches
// its CPU with rtscope isolation for watchFor, from a second into its
// run; cal is the CPU's /proc/interrupts CAL count over the watch.
func isolationOfScenario(t *testing.T, name string, watchFor time.Duration) (snap *isolation.Snapshot, victim int, cal uint64) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	s, _ := Get(name)
	_, victim, err := s.Resolve(Config{CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe, childArg, name, "--duration", (watchFor + 2*time.Second).String())
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := child.Wait(); err != nil {
			t.Errorf("scenario %s: %v", name, err)
		}
	}()
	waitThreads(t, child.Process.Pid, s.Threads())
	var before, after uint64
	snap, err = isolation.Collect(context.Background(), isolation.Options{CPUs: []int{victim}, Duration: watchFor,
		Ready: func() { before = procCallIPIs(t, victim) }, Ending: func() { after = procCallIPIs(t, victim) }})
	if err != nil {
		t.Fatal(err)
	}
	return snap, victim, after - before
}

// waitThreads waits until process pid runs threads named names (the
// child may first wait for another scenario on its CPU to end), and a
// little more for them to be pinned and running.
func waitThreads(t *testing.T, pid int, names []string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		seen := map[string]bool{}
		for _, e := range ents {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/comm", pid, e.Name()))
			seen[strings.TrimSpace(string(b))] = true
		}
		if !slices.ContainsFunc(names, func(n string) bool { return !seen[n] }) {
			time.Sleep(200 * time.Millisecond)
			return
		}
	}
	t.Fatalf("the scenario's threads %v did not start in 2 minutes", names)
}

// The intruder's membarrier calls reach the control loop's CPU as
// function-call IPIs (ipi_mb): of the call-function IPIs /proc/interrupts
// counts there while rtscope isolation watches it, 90% at least are
// attributed to the intruder; and the refresh_vm_stats work run on that
// CPU was queued there by the refresher, 90% of it at least. Without the
// send tracepoints (before 6.3), the IPIs count with no sender.
func TestSignatureRemoteWork(t *testing.T) {
	twice(t, func() error {
		snap, victim, seen := isolationOfScenario(t, "remote-work", remoteWatch())
		// Before 6.3 (the rt and std guests' 6.1) no send tracepoint: the
		// IPIs are received with no sender, and the report says so.
		noSends := slices.Contains(snap.Missing, "csd_queue_cpu")
		var mine uint64
		for _, r := range snap.IPIs {
			if r.CPU == victim && r.Kind == "function call" && (r.Comm == "intruder" || noSends && r.SenderTID == 0) {
				mine += r.Count
			}
		}
		t.Logf("CPU %d: /proc/interrupts CAL +%d, %d function calls attributed to the intruder (not watched: %v)", victim, seen, mine, snap.Missing)
		var ran, queued uint64
		for _, w := range snap.Works {
			if w.CPU == victim && w.Func == "refresh_vm_stats" {
				ran += w.Count
			}
		}
		for _, q := range snap.Queued {
			if q.CPU == victim && q.Func == "refresh_vm_stats" && q.Comm == "refresher" {
				queued += q.Count
			}
		}
		t.Logf("CPU %d: refresh_vm_stats ran %d times, %d queued by the refresher", victim, ran, queued)
		// Both logged before either is judged.
		if seen < minMembarrierIPIs() || mine*10 < seen*9 {
			return fmt.Errorf("%d of the %d call-function IPIs CPU %d took are attributed to the intruder; want 90%% of %d at least",
				mine, seen, victim, minMembarrierIPIs())
		}
		if ran < minRefreshes() || queued*10 < ran*9 {
			return fmt.Errorf("refresh_vm_stats ran %d times on CPU %d, %d queued by the refresher; want 90%% of %d at least",
				ran, victim, queued, minRefreshes())
		}
		return nil
	})
}

// remoteWatch is how long the loop's CPU is watched: 6 s on a host; 20 s
// in an emulated guest, where the rt guest's threads made 1-99 IPIs and
// 0-3 refresh_vm_stats runs in 6 s (vmtest 36-isolation, TCG, 2026-11-28):
// too few to judge a share, so the run is made longer.
func remoteWatch() time.Duration {
	if emulated {
		return 20 * time.Second
	}
	return 6 * time.Second
}

// minRefreshes is how many refresh_vm_stats runs the loop's CPU must
// take: a stat_refresh write waits for a kworker on every CPU, which
// competes with the machine's other load: 104 to 276 in 4 s on a quiet
// host, 6 and 48 while other tests ran on both CPUs (2026-11-28).
func minRefreshes() uint64 {
	if emulated {
		return 5
	}
	return 20
}

// minMembarrierIPIs is how many call-function IPIs the loop's CPU must
// take: thousands a second here; the emulated rt guest's intruder made
// 87 to 136 in 4 s (vmtest rt, TCG, 2026-11-28: each call waits for the
// emulated CPU 1 to answer), every one attributed.
func minMembarrierIPIs() uint64 {
	if emulated {
		return 50
	}
	return 1000
}

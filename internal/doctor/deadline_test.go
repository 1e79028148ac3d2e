package doctor

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// deadline_bandwidth: the host's default admits DEADLINE reservations up to
// 95% of each CPU and none runs; on the tuned box (no admission control)
// the DEADLINE thread found in /proc is listed with its reservation, and
// one that leaves no room warns.
func TestDeadlineBandwidth(t *testing.T) {
	h := run(t, "host", Env{}).Get("deadline_bandwidth")
	if h == nil || h.Status != Info || !strings.Contains(h.Evidence, "may reserve 95.0% of each CPU") ||
		!strings.Contains(h.Evidence, "no DEADLINE task now") {
		t.Fatalf("host: %+v", h)
	}
	saved := dlReservation
	defer func() { dlReservation = saved }()
	dlReservation = func(tid int) (uint64, uint64, bool) {
		if tid != 1100 {
			t.Errorf("reservation of %d asked, not a DEADLINE thread", tid)
		}
		return 6_000_000, 10_000_000, true
	}
	r := run(t, "rt-tuned", Env{}).Get("deadline_bandwidth")
	if r.Status != Info || !strings.Contains(r.Evidence, "no DEADLINE admission control") ||
		!strings.Contains(r.Evidence, "1 DEADLINE thread(s) reserve 0.60 CPUs (dl-loop/1100 6000/10000 us)") {
		t.Errorf("rt-tuned: %s: %s", r.Status, r.Evidence)
	}
	dlReservation = func(int) (uint64, uint64, bool) { return 10_000_000, 10_000_000, true }
	over := fstest.MapFS{"proc/sys/kernel/sched_rt_runtime_us": {Data: []byte("950000\n")}}
	m := &machine{fsys: overlay{over: over, base: os.DirFS("testdata/rt-tuned")}, online: []int{0}}
	if w := checkDeadlineBandwidth(m, nil); w.Status != Warn || w.Remedy == "" {
		t.Errorf("a full reservation: %s: %s", w.Status, w.Evidence)
	}
}

package watch

import (
	"io"
	"os"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/engine"
)

// TestHousekeeperThreads: rtscope's own threads include the calling one,
// and are re-read only after monitorRefresh.
func TestHousekeeperThreads(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := newHousekeeper(nil, false, io.Discard)
	tids := h.threads()
	if !slices.Contains(tids, uint32(unix.Gettid())) {
		t.Errorf("own threads %v lack the calling thread %d", tids, unix.Gettid())
	}
	h.monitorTIDs = []uint32{1}
	if got := h.threads(); !slices.Equal(got, []uint32{1}) {
		t.Errorf("re-read within monitorRefresh: %v", got)
	}
	if h.monitor.PID == 0 {
		t.Error("monitor without rtscope's pid")
	}
}

// TestWatchedPlaces: the choice sees live tasks only, each with the CPUs
// of its mask (all online CPUs when the mask cannot say: over 64).
func TestWatchedPlaces(t *testing.T) {
	online := []int{0, 1, 2, 3}
	ws := watchedPlaces(online, []engine.Placement{
		{Id: 1, Policy: unix.SCHED_FIFO, LastCPU: 2, CpusMask: 0b1100, NrCpusAllowed: 2},
		{Id: 2, Exited: true, CpusMask: 1, NrCpusAllowed: 1},
		{Id: 3, LastCPU: 0, NrCpusAllowed: 128},
	})
	if len(ws) != 2 {
		t.Fatalf("%d watched, want 2 (the exited one left out)", len(ws))
	}
	if !ws[0].RT || !slices.Equal(ws[0].CPUs, []int{2, 3}) || ws[0].LastCPU != 2 {
		t.Errorf("FIFO task: %+v", ws[0])
	}
	if ws[1].RT || !slices.Equal(ws[1].CPUs, online) {
		t.Errorf("task of 128 CPUs: %+v", ws[1])
	}
	if h := newHousekeeper([]int{1}, true, io.Discard); h.auto {
		t.Error("-H given, yet the choice is automatic")
	}
}

// TestOwnCandidates: rtscope's own threads keep off the CPUs set apart at
// boot while another CPU is online, and take any when all are set apart.
func TestOwnCandidates(t *testing.T) {
	if got := ownCandidates([]int{0, 1, 2, 3}, []int{1, 3, 1}); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("isolated 1 and 3 of 0-3: %v, want [0 2]", got)
	}
	if got := ownCandidates([]int{0, 1}, nil); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("none set apart: %v, want [0 1]", got)
	}
	if got := ownCandidates([]int{0, 1}, []int{0, 1}); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("every CPU set apart: %v, want them all", got)
	}
}

// TestSetApart reads both kernel lists, either of which may be missing.
func TestSetApart(t *testing.T) {
	dir := t.TempDir()
	iso, nohz := dir+"/isolated", dir+"/nohz_full"
	if err := os.WriteFile(iso, []byte("1-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nohz, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := sysSetApart
	defer func() { sysSetApart = old }()
	sysSetApart = []string{iso, nohz, dir + "/missing"}
	if got := setApart(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("setApart = %v, want [1 2]", got)
	}
}

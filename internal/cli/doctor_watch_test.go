package cli

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/cpuset"
	"github.com/rtscope/rtscope/internal/isolation"
)

// doctor's -c needs --watch, and a bad --watch or -c is one sentence on
// stderr, status 1, before any check runs or BPF is loaded.
func TestDoctorWatchCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "1"}, "rtscope doctor: -c needs --watch DURATION"},
		{[]string{"--watch", "2h", "-c", "1"}, "rtscope doctor: --watch 2h0m0s: want 0 to 1h"},
		{[]string{"--watch", "-1s"}, "rtscope doctor: --watch -1s: want 0 to 1h"},
		{[]string{"--watch", "1s", "-c", "x"}, `rtscope doctor: -c: CPU list "x": "x" is not a CPU number or range`},
		{[]string{"--watch", "1s", "-c", "4000"}, "rtscope doctor: -c: CPU 4000 is not online"},
	} {
		unpinAfter(t)
		code, stdout, stderr := mainOutput(t, append([]string{"doctor", "--bpf=false", "--sample", "0"}, c.args...)...)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("doctor %v: status %d, stdout %.80q, stderr %q; want status 1 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// The CPUs doctor --watch watches: -c's when given, else the isolated and
// nohz_full ones, else the sentence that says there are none (no error).
func TestDoctorWatchCPUs(t *testing.T) {
	unpinAfter(t)
	f := doctorFlags{watch: time.Second, cpus: "1"}
	if err := f.checkWatch(); err != nil {
		t.Fatal(err)
	}
	cpus, err := f.isolationCPUs()
	if err != nil || len(cpus) != 1 || cpus[0] != 1 {
		t.Errorf("-c 1: %v, %v", cpus, err)
	}
	f.cpus = ""
	want, none := isolation.DefaultCPUs()
	cpus, err = f.isolationCPUs()
	if none != nil && (!errors.Is(err, errNoIsolated) || cpus != nil) {
		t.Errorf("no isolated CPU here: %v, %v; want the sentence", cpus, err)
	}
	if none == nil && (err != nil || !slices.Equal(cpus, want)) {
		t.Errorf("isolated and nohz_full %v: %v, %v", want, cpus, err)
	}
}

// unpinAfter moves the test's threads back to every online CPU at its end
// (doctor --watch moves them off the watched CPUs).
func unpinAfter(t *testing.T) {
	t.Cleanup(func() {
		online, err := cpuset.Online()
		if err == nil {
			err = cpuset.PinProcess(cpuset.Mask(online), nil)
		}
		if err != nil {
			t.Error(err)
		}
	})
}

// doctor --watch 2s -c 1 runs the checks, then watches CPU 1: its text
// has the isolation section after the summary, with CPU 1's judgement,
// and its JSON the same report under "isolation".
func TestDoctorWatchIsolation(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: doctor --watch loads the isolation programs (CI runs as root)")
	}
	unpinAfter(t)
	js := t.TempDir() + "/doctor.json"
	code, stdout, stderr := mainOutput(t, "doctor", "--bpf=false", "--sample", "0", "--watch", "2s", "-c", "1", "--json", js)
	if code == 1 {
		t.Fatalf("doctor --watch 2s -c 1: status 1, stderr %q", stderr)
	}
	summary := strings.Index(stdout, "\nsummary: ")
	section := strings.Index(stdout, "\nisolation: CPU 1 watched for ")
	if summary < 0 || section < summary || !strings.Contains(stdout[section:], "\nCPU 1: ") || !strings.Contains(stdout[section:], "\nCPU 1 (") {
		t.Errorf("no isolation section of CPU 1 after the summary:\n%s", stdout)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Checks    []json.RawMessage `json:"checks"`
		Isolation struct {
			CPUs   []int `json:"cpus"`
			Report struct {
				DurationNs uint64 `json:"duration_ns"`
				CPUs       []struct {
					CPU        int               `json:"cpu"`
					Intrusions []json.RawMessage `json:"intrusions"`
				} `json:"cpus"`
			} `json:"report"`
		} `json:"isolation"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	iso := doc.Isolation
	if len(doc.Checks) == 0 || len(iso.CPUs) != 1 || iso.CPUs[0] != 1 || len(iso.Report.CPUs) != 1 || iso.Report.CPUs[0].CPU != 1 ||
		iso.Report.DurationNs < uint64(time.Second) {
		t.Errorf("JSON: %d checks, isolation %+v", len(doc.Checks), iso)
	}
}

package target

import (
	"os"
	"strings"
	"testing"
)

func TestCgroupPlace(t *testing.T) {
	for _, c := range []struct {
		path string
		want Place
	}{
		{"/system.slice/foo.service", Place{Unit: "foo.service"}},
		{"/system.slice/foo.service/worker", Place{Unit: "foo.service"}},
		{"/user.slice/user-0.slice/user@0.service/app.slice/bar.service", Place{Unit: "bar.service"}},
		{"/user.slice/user-0.slice/user@0.service/init.scope", Place{Unit: "user@0.service"}},
		{"/user.slice/user-0.slice/session-3.scope", Place{}},
		{"/", Place{}},
		{"", Place{}},
		{"/.service", Place{}},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_0000_4e5f_8a9b_0123456789ab.slice/cri-containerd-abc.scope",
			Place{Pod: "1a2b3c4d-0000-4e5f-8a9b-0123456789ab"}},
		{"/kubepods.slice/kubepods-pod1a2b3c4d_0000_4e5f_8a9b_0123456789ab.slice", Place{Pod: "1a2b3c4d-0000-4e5f-8a9b-0123456789ab"}},
		{"/kubepods/besteffort/pod1a2b3c4d-0000-4e5f-8a9b-0123456789ab/0123abcd", Place{Pod: "1a2b3c4d-0000-4e5f-8a9b-0123456789ab"}},
		{"/kubepods/pod1a2b3c4d-0000-4e5f-8a9b-0123456789ab", Place{Pod: "1a2b3c4d-0000-4e5f-8a9b-0123456789ab"}},
		// Not pods: a pod-like name outside kubepods, a UID that is not one.
		{"/system.slice/pod1234", Place{}},
		{"/kubepods/burstable/podNOT-A-UID", Place{}},
		{"/kubepods.slice/kubepods-burstable.slice", Place{}},
	} {
		if got := CgroupPlace(c.path); got != c.want {
			t.Errorf("CgroupPlace(%q) = %+v, want %+v", c.path, got, c.want)
		}
	}
}

// TestTaskPlace reads this test's own cgroup: the same place as its path.
func TestTaskPlace(t *testing.T) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil || !strings.Contains(string(b), "0::") {
		t.Fatalf("needs cgroup v2 (CI has it): /proc/self/cgroup has no 0:: line (%v)", err)
	}
	_, path, _ := strings.Cut(string(b), "0::")
	path, _, _ = strings.Cut(path, "\n")
	got, err := TaskPlace(uint32(os.Getpid()))
	if err != nil || got != CgroupPlace(path) {
		t.Fatalf("TaskPlace(self) = %+v, %v; want %+v", got, err, CgroupPlace(path))
	}
	if _, err := TaskPlace(1 << 30); err == nil {
		t.Fatal("TaskPlace of a task that does not exist: no error")
	}
}

// FuzzCgroupPlace: any path gives a unit that is one of its components
// ending in .service, and a pod that is a UID (hex digits and dashes) only
// under a kubepods component.
func FuzzCgroupPlace(f *testing.F) {
	for _, s := range []string{"/system.slice/foo.service", "/kubepods/pod12-ab/x", "/kubepods.slice/kubepods-besteffort-pod1_2.slice/y.scope", "/a/.service", "//", "/kubepods-pod.slice"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		p := CgroupPlace(path)
		comps := strings.Split(path, "/")
		if p.Unit != "" {
			found := false
			for _, c := range comps {
				found = found || c == p.Unit
			}
			if !found || !strings.HasSuffix(p.Unit, ".service") || strings.Contains(p.Unit, "/") {
				t.Fatalf("CgroupPlace(%q): unit %q is not a .service component", path, p.Unit)
			}
		}
		if p.Pod != "" {
			if _, ok := podUID(p.Pod); !ok || !strings.Contains(path, "kubepods") || strings.Contains(p.Pod, "/") {
				t.Fatalf("CgroupPlace(%q): pod %q is not a UID under kubepods", path, p.Pod)
			}
		}
	})
}

package explain

import (
	"os"
	"testing"
)

func TestStatFields(t *testing.T) {
	f, ok := statFields("1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 150 0 7 0 1 2")
	if !ok || f[0] != "S" || f[7] != "150" || f[9] != "7" {
		t.Errorf("fields %v", f)
	}
}

// /proc hygiene of this test process: its memory is not locked (tests never
// mlock), and its major fault count reads as a number.
func TestProcHygiene(t *testing.T) {
	h := ProcHygiene(uint32(os.Getpid()), uint32(os.Getpid()))
	if v, ok := h[HygieneMemNotLocked]; !ok || v != 1 {
		t.Errorf("memory_not_locked %v (%v)", v, h)
	}
	if _, ok := h[HygieneMajorFaults]; !ok {
		t.Errorf("no major_page_faults: %v", h)
	}
	if h := ProcHygiene(0x7ffffff0, 0x7ffffff0); len(h) != 0 {
		t.Errorf("a task that does not exist: %v", h)
	}
}

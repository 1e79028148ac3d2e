package workload

import "testing"

// The function-call rows of x86 and arm64, summed for one CPU.
func TestCallIPIs(t *testing.T) {
	x86 := "           CPU0       CPU1\n LOC:     100     200   Local timer interrupts\n CAL:      7      42   Function call interrupts\n TLB:      3      21   TLB shootdowns\n"
	arm := "           CPU0       CPU1\nIPI0:     5     6       Rescheduling interrupts\nIPI1:     10     20       Function call interrupts\nIPI5:     1      2       Single function call interrupts\n"
	for _, c := range []struct {
		name, text string
		cpu        int
		want       uint64
	}{{"x86", x86, 1, 42}, {"arm64", arm, 1, 22}, {"arm64 CPU 0", arm, 0, 11}} {
		got, err := callIPIs(c.text, c.cpu)
		if err != nil || got != c.want {
			t.Errorf("%s: %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	if _, err := callIPIs(x86, 5); err == nil {
		t.Error("CPU 5 of a 2-CPU table: no error")
	}
}

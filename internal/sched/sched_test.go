package sched

import "testing"

func TestDescribe(t *testing.T) {
	cases := []struct {
		pol  uint32
		prio int
		want string
	}{
		{FIFO, 19, "FIFO 80"}, {RR, 98, "RR 1"}, {Normal, 120, "OTHER nice 0"}, {Normal, 139, "OTHER nice 19"},
		{Deadline, -1, "DEADLINE"}, {Normal, 89, "OTHER boosted to RT 10"},
	}
	for _, c := range cases {
		if got := Describe(c.pol, c.prio); got != c.want {
			t.Errorf("Describe(%d,%d) = %q, want %q", c.pol, c.prio, got, c.want)
		}
	}
	// The table and the formatting agree everywhere, its edges and past
	// them (a policy or prio the kernel may add) included.
	for pol := uint32(0); pol <= 9; pol++ {
		for prio := -2; prio <= 141; prio++ {
			if got, want := Describe(pol, prio), describe(pol, prio); got != want {
				t.Fatalf("Describe(%d,%d) = %q, formatted %q", pol, prio, got, want)
			}
		}
	}
	if a := testing.AllocsPerRun(10, func() { _ = Describe(FIFO, 19) }); a != 0 {
		t.Errorf("Describe allocates %v times a call: decoding calls it for every event", a)
	}
	if KPrioFromByte(255) != -1 || KPrioFromByte(19) != 19 {
		t.Error("KPrioFromByte")
	}
}

func TestStateLetters(t *testing.T) {
	cases := map[uint32]string{0: "R", 1: "S", 2: "D", 0x402: "I", 0x1000: "D(rtlock)", 0x80: "X", 0x4: "T"}
	for s, want := range cases {
		if got := StateLetters(s); got != want {
			t.Errorf("StateLetters(%#x) = %q, want %q", s, got, want)
		}
	}
}

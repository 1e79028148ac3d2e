package cpuset

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseList checks ParseList on any CPU list: an accepted list is
// sorted, distinct and within the kernel's CPU numbers, and FormatList
// prints it back to the same CPUs; a refused one gets one sentence that
// quotes what was given.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"0", "0-3,5", "7-8,0", " 1 , 2 ", "3-1", "-1", "1-", "1--2", "8191", "8192", "0-8191",
		"99999999999999999999", "1,,2", "", "a", "0-3,2-5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseList(s)
		if err != nil {
			msg := err.Error()
			if strings.TrimSpace(s) != "" && !strings.Contains(msg, strconv.Quote(strings.TrimSpace(s))) || strings.Contains(msg, "\n") {
				t.Fatalf("ParseList(%q): error %q is not one line quoting the input", s, msg)
			}
			return
		}
		if len(cpus) == 0 {
			t.Fatalf("ParseList(%q) accepted an empty list", s)
		}
		for i, c := range cpus {
			if c < 0 || c >= maxCPU || (i > 0 && c <= cpus[i-1]) {
				t.Fatalf("ParseList(%q) = %v: not sorted, distinct CPUs below %d", s, cpus, maxCPU)
			}
		}
		back, err := ParseList(FormatList(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("ParseList(%q) = %v, printed %q, read back %v (%v)", s, cpus, FormatList(cpus), back, err)
		}
	})
}

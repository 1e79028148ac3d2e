package cli

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseIDs checks the --tid/--pid values: an accepted id is exactly the
// number given (no silent wrap, no trailing text dropped); a refusal is one
// line quoting the value. Range (0, negative, existence) is target.Validate's.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"1", " 42 ", "-5", "0", "1x", "", "99999999999999999999", "+7", "0x10", "1 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := parseIDs("tid", []string{s})
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, strconv.Quote(s)) || strings.Contains(msg, "\n") {
				t.Fatalf("parseIDs(%q): error %q is not one line quoting the value", s, msg)
			}
			return
		}
		if len(ids) != 1 || strconv.Itoa(ids[0]) != strings.TrimSpace(s) {
			t.Fatalf("parseIDs(%q) = %v: not the number given", s, ids)
		}
	})
}

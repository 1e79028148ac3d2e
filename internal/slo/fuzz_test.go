package slo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks Parse on any --slo value: an accepted bound names a
// known metric, is above zero and fits in an int64 of nanoseconds, and
// reads back the same when printed in the documented syntax; a refused one
// gets one sentence that quotes what was given.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"latency=50us", "1234:cycle=2ms", "response=1e3us", "0:latency=1ms", "lat=1s",
		"latency=0ns", "latency", "=5us", "4294967296:latency=1ms", "-1:latency=1ms", "latency=9223372036854775807ns",
		"latency=9223372036854775808ns", " Period = 3ms ", "a:b:c=1us", "latency=1us=2us"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := Parse(s)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, strconv.Quote(s)) || strings.Contains(msg, "\n") {
				t.Fatalf("Parse(%q): error %q is not one line quoting the input", s, msg)
			}
			return
		}
		if b.Ns == 0 || b.Ns > math.MaxInt64 {
			t.Fatalf("Parse(%q) = %+v: the bound is out of range", s, b)
		}
		printed := fmt.Sprintf("%s=%dns", b.Metric, b.Ns)
		if b.ID != 0 {
			printed = fmt.Sprintf("%d:%s", b.ID, printed)
		}
		back, err := Parse(printed)
		if err != nil || back != b {
			t.Fatalf("Parse(%q) = %+v, printed %q, read back %+v (%v)", s, b, printed, back, err)
		}
	})
}

package units

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseNs checks ParseNs on any input: an accepted time fits in an
// int64 of nanoseconds (time.Duration and the scenario parameters convert
// it), prints back to the same value, and parsing is deterministic; a
// refused one gets one sentence that quotes what was given.
func FuzzParseNs(f *testing.F) {
	for _, s := range []string{"50us", "1.5ms", "2s", "1e3us", "0ns", " 7 µs ", "3μs", "1m", "2h",
		"9223372036854775807ns", "9223372036854775808ns", "9.3e18ns", "1e30s", "-1us", "NaNs", "Infms",
		"0x1p4us", "12", "", "us", "1_000us", "+5ms", "4.99999999999999999ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseNs(s)
		v2, err2 := ParseNs(s)
		if v != v2 || (err == nil) != (err2 == nil) {
			t.Fatalf("ParseNs(%q) is not deterministic", s)
		}
		if err != nil {
			msg := err.Error()
			if strings.TrimSpace(s) != "" && !strings.Contains(msg, strconv.Quote(s)) {
				t.Fatalf("ParseNs(%q): error %q does not quote the input", s, msg)
			}
			if strings.Contains(msg, "\n") {
				t.Fatalf("ParseNs(%q): error %q is not one line", s, msg)
			}
			return
		}
		if v > math.MaxInt64 {
			t.Fatalf("ParseNs(%q) = %d: beyond an int64 of nanoseconds", s, v)
		}
		back, err := ParseNs(strconv.FormatUint(v, 10) + "ns")
		if err != nil || back != v {
			t.Fatalf("ParseNs(%q) = %d, but %dns parses to %d (%v)", s, v, v, back, err)
		}
	})
}

// FuzzUsRoundTrip checks that what rtscope prints (Us, one decimal of a
// microsecond) reads back with its unit to within that decimal.
func FuzzUsRoundTrip(f *testing.F) {
	for _, v := range []uint64{0, 1, 49, 50, 51, 999, 1000, 123456, 1 << 40, math.MaxInt64 >> 10} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v uint64) {
		if v > 1<<46 { // 19.5 h: beyond, the float64 of the printed microseconds rounds by more than 50 ns; no latency shown is this large
			return
		}
		back, err := ParseNs(Us(v) + "us")
		if err != nil {
			t.Fatalf("%d ns prints as %s us, which does not parse: %v", v, Us(v), err)
		}
		diff := int64(back) - int64(v)
		if diff < -50 || diff > 50 {
			t.Fatalf("%d ns prints as %s us, which reads back as %d ns", v, Us(v), back)
		}
	})
}

// FuzzParseDuration checks the -d of watch, demo and timerlat on any value: an accepted duration is
// positive and at most a century (a wrapped one never ended the run).
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30s", "10m", "2h", "1d", "500ms", "5", "0", "36500d", "36501d", "106752d", "-1s", "1.5s", "s", "4294967296s", "1m30s", "2.5s", "1000000h", "-5s", "+5s", "1.5d", ".5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, strconv.Quote(s)) || strings.Contains(msg, "\n") {
				t.Fatalf("ParseDuration(%q): error %q is not one line quoting the input", s, msg)
			}
			return
		}
		if d <= 0 || d > MaxDuration {
			t.Fatalf("ParseDuration(%q) = %v: outside 0 to a century", s, d)
		}
	})
}

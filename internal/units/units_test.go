package units

import "testing"

func TestParseNs(t *testing.T) {
	good := map[string]uint64{"50us": 50000, "1.5ms": 1500000, "2s": 2e9, "100ns": 100, "3µs": 3000,
		"0us": 0, " 7 ms ": 7e6, "1m": 60e9}
	for in, want := range good {
		got, err := ParseNs(in)
		if err != nil || got != want {
			t.Errorf("ParseNs(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "abc", "-5us", "50", "50xs", "us", "1e400s", "NaNus"} {
		if _, err := ParseNs(bad); err == nil {
			t.Errorf("ParseNs(%q) accepted", bad)
		}
	}
}

func TestFormat(t *testing.T) {
	if got := Us(123456); got != "123.5" {
		t.Errorf("Us = %q", got)
	}
	if got := UsFine(1234); got != "1.234" {
		t.Errorf("UsFine = %q", got)
	}
	v, f := uint64(2500), 2500.4
	if UsOf(nil) != Unset || UsFOf(nil) != Unset || UsOf(&v) != "2.5" || UsFOf(&f) != "2.5" {
		t.Errorf("UsOf/UsFOf: %q %q %q %q", UsOf(nil), UsFOf(nil), UsOf(&v), UsFOf(&f))
	}
}

// Package units parses and prints times. rtscope keeps nanoseconds
// internally and prints microseconds in every human output.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var suffixes = []struct {
	s  string
	ns float64
}{
	{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"μs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
}

// ParseNs parses a non-negative time with a unit (ns, us, µs, ms, s, m, h),
// e.g. "50us", "1.5ms", "2s". A bare number is refused: the unit is never guessed.
func ParseNs(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty time value")
	}
	// Longest suffix first: "ms" before "s", "us" before "s".
	var num string
	var mult float64
	for _, suf := range []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"} {
		if strings.HasSuffix(t, suf) {
			num = strings.TrimSpace(strings.TrimSuffix(t, suf))
			for _, x := range suffixes {
				if x.s == suf {
					mult = x.ns
				}
			}
			break
		}
	}
	if mult == 0 {
		if _, err := strconv.ParseFloat(t, 64); err == nil {
			return 0, fmt.Errorf("time %q has no unit (use ns, us, ms or s)", s)
		}
		return 0, fmt.Errorf("time %q has an unknown unit (use ns, us, ms or s)", s)
	}
	// A whole number is read exactly (a float64 rounds beyond 2^53 ns).
	if n, err := strconv.ParseUint(num, 10, 64); err == nil {
		if n > math.MaxInt64/uint64(mult) {
			return 0, fmt.Errorf("time %q is too large", s)
		}
		return n * uint64(mult), nil
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("time %q is not a number with a unit", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("time %q is negative", s)
	}
	ns := v * mult
	// float64(math.MaxInt64) is 2^63, which an int64 cannot hold: the
	// result must stay below it (time.Duration and int64 parameters).
	if ns >= math.MaxInt64 {
		return 0, fmt.Errorf("time %q is too large", s)
	}
	return uint64(math.Round(ns)), nil
}

// Us prints ns as microseconds with one decimal, e.g. "123.4".
func Us(ns uint64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }

// UsF prints a float ns as microseconds with one decimal.
func UsF(ns float64) string { return strconv.FormatFloat(ns/1e3, 'f', 1, 64) }

// UsOf prints *p as Us does, or Unset when there is no value (nil).
func UsOf(p *uint64) string {
	if p == nil {
		return Unset
	}
	return Us(*p)
}

// UsFOf prints *p as UsF does, or Unset when there is no value (nil).
func UsFOf(p *float64) string {
	if p == nil {
		return Unset
	}
	return UsF(*p)
}

// UsFine prints ns as microseconds with three decimals (trace timestamps).
func UsFine(ns int64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 3, 64) }

// Unset is how human output shows a value that does not exist.
const Unset = "-"

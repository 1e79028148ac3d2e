package units

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxDuration is the longest run a -d accepts: a century. time.Duration
// ends at about 292 years; 106752d used to wrap negative and the run
// never ended.
const MaxDuration = 100 * 365 * 24 * time.Hour

// ParseDuration parses the length of a run (-d of watch, timerlat and
// demo) the way rtla does: a whole number with ms, s, m, h or d, seconds
// without a unit ("30", "30s", "10m", "1d"). Go's forms are accepted too
// ("1m30s", "2.5s"), as watch and demo took them first. The result is
// positive and at most MaxDuration.
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("duration %q: use a positive whole number with s, m, h or d (e.g. 30s, 10m; seconds without a unit)", s)
	num, unit := s, time.Second
	for _, u := range []struct {
		suf string
		d   time.Duration
	}{{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}} {
		if strings.HasSuffix(s, u.suf) {
			num, unit = strings.TrimSuffix(s, u.suf), u.d
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		// Go's compound and fractional forms; a bare fraction has no unit.
		d, gerr := time.ParseDuration(s)
		if gerr != nil || strings.ContainsAny(s, "+-") {
			return 0, bad
		}
		if d <= 0 {
			return 0, bad
		}
		if d > MaxDuration {
			return 0, fmt.Errorf("duration %q: at most %dd", s, MaxDuration/(24*time.Hour))
		}
		return d, nil
	}
	if n == 0 {
		return 0, bad
	}
	if n > uint64(MaxDuration/unit) {
		return 0, fmt.Errorf("duration %q: at most %dd", s, MaxDuration/(24*time.Hour))
	}
	return time.Duration(n) * unit, nil
}

// DurationFlag is a flag value (pflag.Value) that parses with
// ParseDuration into *D.
type DurationFlag struct{ D *time.Duration }

// Set parses s into *D.
func (f DurationFlag) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*f.D = d
	return nil
}

// String prints *D as Go does; "0" when unset, so that help shows no default.
func (f DurationFlag) String() string {
	if f.D == nil || *f.D == 0 {
		return "0"
	}
	return f.D.String()
}

// Type names the value in help.
func (f DurationFlag) Type() string { return "duration" }

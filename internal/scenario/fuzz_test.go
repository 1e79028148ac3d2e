package scenario

import (
	"io"
	"strings"
	"testing"
)

// FuzzParams checks every scenario's parameters on any value, as `scenario
// run NAME --PARAM=VALUE [--force]` reads them: an accepted run has every
// value within its hard bounds, and without --force none beyond its
// default in the guarded direction; every refusal is one line.
func FuzzParams(f *testing.F) {
	for _, s := range []struct {
		sc, p uint8
		v     string
		force bool
	}{{0, 0, "2ms", false}, {1, 0, "1e3us", true}, {2, 1, "9223372036854775808ns", true}, {3, 0, "-1", false},
		{4, 2, "99", true}, {5, 0, "0ns", false}, {6, 1, "1e30s", true}, {7, 0, "true", false}, {2, 0, "100us", false}} {
		f.Add(s.sc, s.p, s.v, s.force)
	}
	all := All()
	f.Fuzz(func(t *testing.T, si, pi uint8, value string, force bool) {
		s := all[int(si)%len(all)]
		if len(s.Params) == 0 {
			return
		}
		p := s.Params[int(pi)%len(s.Params)]
		var cfg Config
		fs, collect := s.Flags(&cfg)
		fs.SetOutput(io.Discard)
		args := []string{"--" + p.Name + "=" + value}
		if force && fs.Lookup("force") != nil {
			args = append(args, "--force")
		}
		if err := fs.Parse(args); err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%s %v: error %q is not one line", s.Name, args, err)
			}
			return
		}
		collect()
		v, _, err := s.Resolve(cfg)
		if err != nil {
			// One line that names the flags at fault ("priorities must be
			// ordered H > M > L (got 90, 1, 10)" named none).
			if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--") {
				t.Fatalf("%s %v: error %q is not one line naming the flags", s.Name, args, err)
			}
			return
		}
		for _, q := range s.Params {
			x := v[q.Name]
			if q.Kind != Bool && (x < q.Min || x > q.Max) {
				t.Fatalf("%s %v: --%s %d accepted outside %s", s.Name, args, q.Name, x, q.Bounds())
			}
			if !cfg.Force && ((q.Guard == GuardAbove && x > q.Default) || (q.Guard == GuardBelow && x < q.Default)) {
				t.Fatalf("%s %v: --%s %s beyond its default %s accepted without --force", s.Name, args, q.Name, q.Format(x), q.Format(q.Default))
			}
		}
	})
}

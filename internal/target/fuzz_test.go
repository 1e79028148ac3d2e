package target

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseUser checks --user on any value (against this machine's user
// database): parsing is deterministic, an accepted user has a uid and a
// group, and a refusal is one line quoting the value.
func FuzzParseUser(f *testing.F) {
	for _, s := range []string{"root", "nobody", "nobody:nogroup", "0:0", "65534", "root:", ":root", "", "no-such-user", "1:99999999999", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseUser(s)
		c2, err2 := ParseUser(s)
		if (err == nil) != (err2 == nil) || (err == nil && (c.Uid != c2.Uid || c.Gid != c2.Gid)) {
			t.Fatalf("ParseUser(%q) is not deterministic", s)
		}
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, strconv.Quote(s)) || strings.Contains(msg, "\n") {
				t.Fatalf("ParseUser(%q): error %q is not one line quoting the value", s, msg)
			}
			return
		}
		if c == nil {
			t.Fatalf("ParseUser(%q) accepted without a credential", s)
		}
	})
}

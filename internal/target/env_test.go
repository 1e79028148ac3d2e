package target

import (
	"slices"
	"testing"
)

func TestReexecEnv(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []string // nil: no re-exec
	}{
		{[]string{"A=1"}, []string{"A=1", "GODEBUG=asyncpreemptoff=1", ReexecMarker + "="}},
		// The user's GODEBUG is kept, once, before ours (issue: a second
		// GODEBUG entry lost to the first and rtscope re-executed forever).
		{[]string{"GODEBUG=madvdontneed=1", "A=1"}, []string{"A=1", "GODEBUG=madvdontneed=1,asyncpreemptoff=1", ReexecMarker + "=GODEBUG=madvdontneed=1"}},
		{[]string{"GODEBUG=x=1,asyncpreemptoff=1"}, nil},
		// Re-executed once already: never again, whatever GODEBUG says.
		{[]string{"GODEBUG=asyncpreemptoff=0", ReexecMarker + "="}, nil},
	} {
		got, ok := ReexecEnv(c.in)
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("ReexecEnv(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
		if ok {
			if back := UserEnv(got); !sameSet(back, c.in) {
				t.Errorf("UserEnv(ReexecEnv(%q)) = %q; want the user's environment back", c.in, back)
			}
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

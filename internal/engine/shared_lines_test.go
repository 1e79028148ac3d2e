package engine

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// maxSharedLines is how many distinct non-trivial lines the two engines'
// BPF files may have in common: their handlers' logic lives once, in
// bpf/handlers.bpf.h (issue 37: 116 lines shared before).
const maxSharedLines = 30

// trivialLine matches what sharing does not count: blank lines, braces,
// comments, includes, bare returns, one-word guards (if (e), if (!cs)),
// and the map-definition opener.
var trivialLine = regexp.MustCompile(`^$|^[{}]+;?$|^} else {$|^(//|/\*|\*)|^#include |^return( 0)?;$|^if \(!?[a-z_]+\)( {)?$|^struct {$`)

// sourceLines returns the distinct non-trivial lines of a file, trimmed.
func sourceLines(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if !trivialLine.MatchString(l) {
			out[l] = true
		}
	}
	return out
}

// TestEnginesShareFewLines counts the distinct non-trivial lines that
// rtscope.bpf.c and classic.bpf.c have in common (go test -v lists them).
func TestEnginesShareFewLines(t *testing.T) {
	btf := sourceLines(t, "../../bpf/rtscope.bpf.c")
	classic := sourceLines(t, "../../bpf/classic.bpf.c")
	var shared []string
	for l := range btf {
		if classic[l] {
			shared = append(shared, l)
		}
	}
	sort.Strings(shared)
	for _, l := range shared {
		t.Logf("shared: %s", l)
	}
	t.Logf("%d distinct non-trivial lines shared", len(shared))
	if len(shared) > maxSharedLines {
		t.Errorf("rtscope.bpf.c and classic.bpf.c share %d distinct non-trivial lines, want at most %d: move the logic into bpf/handlers.bpf.h", len(shared), maxSharedLines)
	}
}

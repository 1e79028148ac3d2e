package engine

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/features.md's generated table")

// The marker comments around the generated part of docs/features.md.
const (
	featuresBegin = "<!-- features table: generated from internal/engine/features.go by go test ./internal/engine -run TestFeaturesDoc -update; do not edit -->"
	featuresEnd   = "<!-- end of the generated features table -->"
)

// featuresMarkdown is the table of kernel features and the classic
// engine's limits, as docs/features.md shows them.
func featuresMarkdown() string {
	var b strings.Builder
	b.WriteString("| feature | the kernel needs | since | probed by | enables | without it | shown when missing |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range FeatureTable() {
		since, shown := r.Since, "`"+r.Missing+"`"
		if since == "" {
			since = "-"
		}
		if r.Classic != "" {
			shown += "; classic engine: `" + r.Classic + "`"
		}
		fallback := r.Fallback
		if r.Required {
			fallback = "**required**: " + fallback
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", r.Name, r.Needs, since, r.Probe, r.Enables, fallback, shown)
	}
	b.WriteString("\nWhat the classic engine cannot measure (`features.engine_limits`):\n\n")
	for _, l := range ClassicLimits {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	return b.String()
}

// docs/features.md holds the table generated from featureTable: this
// fails when the table changed and the page was not regenerated (-update
// regenerates it).
func TestFeaturesDoc(t *testing.T) {
	const path = "../../docs/features.md"
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(page), featuresBegin+"\n")
	_, after, ok2 := strings.Cut(rest, featuresEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the marker comments %q and %q", path, featuresBegin, featuresEnd)
	}
	want := before + featuresBegin + "\n" + featuresMarkdown() + featuresEnd + after
	if want == string(page) {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: go test ./internal/engine -run TestFeaturesDoc -update", path)
}

package analysis

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rtscope/rtscope/internal/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGoldenJSON: each recorded window's trace (read and written again)
// and its analysis encode byte-identically to testdata/golden (go test
// -update rewrites them): the JSON of event types, waker kinds, sleep
// reasons, causes, CPU states, phases and kinds does not change with the
// Go types behind them.
func TestGoldenJSON(t *testing.T) {
	for name, fx := range loadFixtures(t) {
		t.Run(name, func(t *testing.T) {
			model := fx.Preemption
			if model == "" {
				model = "none"
			}
			doc := struct {
				Trace  *trace.Trace `json:"trace"`
				Result *Result      `json:"result"`
			}{fx.Trace, explain(fx.Trace, fx.subject(), model)}
			got, err := json.MarshalIndent(doc, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
			}
		})
	}
}

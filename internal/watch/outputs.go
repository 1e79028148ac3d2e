package watch

import (
	"fmt"
	"io"

	"github.com/rtscope/rtscope/internal/htmlreport"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/perfetto"
	"github.com/rtscope/rtscope/internal/report"
)

// outputs are the run's output files (internal/outfile).
type outputs struct {
	json, perfetto, html *outfile.File
}

// openOutputs opens the output files at the start: a bad path fails
// before the run, not after it.
func openOutputs(o Options) (*outputs, error) {
	var out outputs
	for _, f := range []struct {
		path string
		dst  **outfile.File
		flag string
	}{{o.JSONPath, &out.json, "--json"}, {o.PerfettoPath, &out.perfetto, "--perfetto"}, {o.HTMLPath, &out.html, "--html"}} {
		if f.path == "" {
			continue
		}
		of, err := outfile.Create(f.path)
		if err != nil {
			out.abort()
			return nil, fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.dst = of
	}
	return &out, nil
}

// write writes and commits every output file.
func (out *outputs) write(rep *report.Report) error {
	if out.json != nil {
		if err := out.json.Fill(rep.EncodeJSON); err != nil {
			return err
		}
	}
	if out.perfetto != nil {
		ws := perfetto.Windows(rep)
		if err := out.perfetto.Fill(func(w io.Writer) error { return perfetto.Write(w, ws) }); err != nil {
			return err
		}
	}
	if out.html != nil {
		if err := out.html.Fill(func(w io.Writer) error { return htmlreport.Write(w, rep) }); err != nil {
			return err
		}
	}
	return nil
}

// abort removes the files not committed.
func (out *outputs) abort() {
	out.json.Abort()
	out.perfetto.Abort()
	out.html.Abort()
}

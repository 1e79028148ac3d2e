package cli

import (
	"errors"
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// Doctor's BPF section has one check per row of the engine's feature
// table, in its order, with the table's sentences: a feature found says
// what it enables, a missing one the table's sentence and the kernel's
// error, a required one fails.
func TestBPFSectionFromTable(t *testing.T) {
	var f engine.Features
	f.Engine = engine.EngineBTF
	for _, row := range engine.FeatureTable() {
		var err error
		switch row.Feature {
		case engine.FeatureFexit, engine.FeatureTaskStorage:
			err = errors.New("operation not permitted")
		}
		f.Record(row.Feature, err)
	}
	b := bpfSection(f, nil)
	rows := engine.FeatureTable()
	if len(b.Features) != len(rows) {
		t.Fatalf("%d features, %d rows", len(b.Features), len(rows))
	}
	for i, row := range rows {
		d := b.Features[i]
		if d.Name != row.Name || !d.Probed || d.Enables != plain(row.Enables) || d.Fallback != plain(row.Fallback) {
			t.Errorf("row %s: %+v", row.Name, d)
		}
		missing := row.Feature == engine.FeatureFexit || row.Feature == engine.FeatureTaskStorage
		if d.Found == missing || (missing && (d.Sentence != plain(row.Missing) || d.Cause != "operation not permitted")) {
			t.Errorf("%s: found %v, sentence %q, cause %q", row.Name, d.Found, d.Sentence, d.Cause)
		}
		if d.Required != row.Required {
			t.Errorf("%s: required %v", row.Name, d.Required)
		}
	}
	// Under the classic engine the features only BTF gives are not
	// required, and say the classic engine's sentence.
	f.Record(engine.FeatureKernelBTF, errors.New("forced by --engine classic"))
	b = bpfSection(f, nil)
	for i, row := range rows {
		if d := b.Features[i]; row.Classic != "" && (d.Required || d.Found || d.Sentence != plain(row.Classic)) {
			t.Errorf("classic %s: %+v", row.Name, d)
		}
	}
	if b := bpfSection(engine.Features{}, errors.New("rtscope needs root")); b.Err != "rtscope needs root" || b.Features[0].Probed {
		t.Errorf("not loaded: %+v", b)
	}
}

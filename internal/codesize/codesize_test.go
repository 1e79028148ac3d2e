package codesize

import (
	"reflect"
	"testing"
)

func TestLongFuncsCountsDeclarationLines(t *testing.T) {
	got, err := LongFuncs("testdata/src", 2, "skipme")
	if err != nil {
		t.Fatal(err)
	}
	// a_test.go's function (6 lines) is a test file's and skipme/ is skipped;
	// short() is 1 line, the limit is exclusive.
	want := []Func{
		{File: "a.go", Line: 11, Name: "init", Lines: 4},
		{File: "a.go", Line: 7, Name: "T.three", Lines: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LongFuncs = %v, want %v", got, want)
	}
	got, err = LongFuncs("testdata/src", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].File != "skipme/b.go" || got[0].Lines != 5 {
		t.Errorf("without skip: %v, want skipme/b.go's long (5 lines) first", got)
	}
}

// Issue 37's target: no non-test function over 80 lines outside bench/,
// but one declarative table if it must be.
const screenLines = 80

// declarativeTable names the one function ("file.go Name", relative to
// the module) allowed over screenLines: none needs it now.
var declarativeTable = ""

// TestModuleFunctionLengths fails on a non-test function over 80 lines
// outside bench/ (-v lists them): the module reached the target, so a new
// one is a regression.
func TestModuleFunctionLengths(t *testing.T) {
	long, err := LongFuncs("../..", screenLines, "bench")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range long {
		if f.File+" "+f.Name == declarativeTable {
			t.Logf("%v (the declarative table)", f)
			continue
		}
		t.Errorf("%v: over %d lines; split it by what its parts do", f, screenLines)
	}
	t.Logf("%d functions over %d lines (target: none, but one declarative table)", len(long), screenLines)
}

// splitPackages are the packages whose long functions are split (issue 37
// item 5): in them the rule holds now, and a new function over 80 lines
// fails here.
var splitPackages = []string{"internal/analysis", "internal/cli", "internal/codesize", "internal/doctor", "internal/engine",
	"internal/htmlreport", "internal/perfetto", "internal/report", "internal/scenario", "internal/serve", "internal/timerlat",
	"internal/trace", "internal/watch"}

func TestSplitPackagesFitOnAScreen(t *testing.T) {
	for _, dir := range splitPackages {
		long, err := LongFuncs("../../"+dir, screenLines)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range long {
			t.Errorf("%s/%s: over %d lines", dir, f, screenLines)
		}
	}
}

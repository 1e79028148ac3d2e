// Package reporttest helps the tests of packages that build reports: every
// report a test builds goes through the consistency check (report.Check).
package reporttest

import (
	"testing"

	"github.com/rtscope/rtscope/internal/report"
)

// Check runs the report's consistency check in a test: a problem of the
// report layer fails it, one whose fix lies elsewhere
// (report.PendingElsewhere) is logged.
func Check(t testing.TB, rep *report.Report) {
	t.Helper()
	bugs, pending := report.CheckSplit(rep)
	for _, p := range pending {
		t.Logf("report check, pending (%s): %s", report.PendingElsewhere[p.Invariant], p)
	}
	for _, p := range bugs {
		t.Errorf("report check: %s", p)
	}
}

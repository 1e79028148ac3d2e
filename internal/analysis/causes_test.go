package analysis

import (
	"slices"
	"testing"
)

// TestCauseTIDs: the blocking thread, then the inversion's owner and its
// preempters; none without either.
func TestCauseTIDs(t *testing.T) {
	r := &Result{BlockingThread: &Thread{TID: 7}, Inversion: &Inversion{Owner: Thread{TID: 3}, Preempters: []*Thread{{TID: 5}, {TID: 6}}}}
	if got := r.CauseTIDs(); !slices.Equal(got, []uint32{7, 3, 5, 6}) {
		t.Errorf("causes %v, want 7 3 5 6", got)
	}
	if got := (&Result{}).CauseTIDs(); got != nil {
		t.Errorf("causes of a result naming none: %v", got)
	}
}

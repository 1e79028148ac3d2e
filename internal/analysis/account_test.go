package analysis

import "testing"

// A thread that exec'd inside the window (timeout -> taskset -> sh) is one
// item, named as it is last: its time, spans and first time kept.
func TestAccountNamesThreadAsLast(t *testing.T) {
	a := &accountant{items: map[string]*Item{}, last: map[string]int64{}}
	first := &Thread{TID: 20970, Comm: "taskset", KPrio: 97}
	last := &Thread{TID: 20970, Comm: "sh", KPrio: 97}
	a.add(Item{Kind: KindInterference, Thread: first, key: "hog", Label: who(first) + " ran"}, 100, 200)
	it := a.add(Item{Kind: KindInterference, Thread: last, key: "hog", Label: who(last) + " ran"}, 300, 1_000)
	if len(a.items) != 1 || it == nil {
		t.Fatalf("%d items, want 1", len(a.items))
	}
	if it.Thread.Comm != "sh" || it.Label != who(last)+" ran" {
		t.Errorf("named %q (%q), want sh", it.Thread.Comm, it.Label)
	}
	if it.Ns != 800 || it.Spans != 2 || it.FirstT != 100 {
		t.Errorf("%d ns in %d spans from %d; want 800 in 2 from 100", it.Ns, it.Spans, it.FirstT)
	}
}

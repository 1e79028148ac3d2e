package slo

import (
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
)

func TestParse(t *testing.T) {
	b, err := Parse("latency=50us")
	if err != nil || b.ID != 0 || b.Metric != metric.Latency || b.Ns != 50000 {
		t.Fatalf("got %+v %v", b, err)
	}
	b, err = Parse("1234:cycle=2ms")
	if err != nil || b.ID != 1234 || b.Metric != metric.Cycle || b.Ns != 2e6 {
		t.Fatalf("got %+v %v", b, err)
	}
	for _, bad := range []string{"latency=abc", "latency=-5us", "bogus=5us", "latency=5parsecs",
		"latency", "0:latency=5us", "x:latency=5us", "latency=0us", "latency=50"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestBuild(t *testing.T) {
	s := Build([]Bound{{0, metric.Latency, 100}, {7, metric.Cycle, 5}, {7, metric.Latency, 50}})
	if s.Default[metric.Latency] != 100 || s.Default[metric.Cycle] != 0 {
		t.Fatalf("defaults %v", s.Default)
	}
	if got := s.ByID[7]; got[metric.Latency] != 50 || got[metric.Cycle] != 5 {
		t.Fatalf("by id %v", got)
	}
}

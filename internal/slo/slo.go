// Package slo parses --slo bounds: [ID:]METRIC=TIME, where ID is a tid or pid.
package slo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/units"
)

// Bound is one parsed --slo flag.
type Bound struct {
	ID     uint32 // 0: every target
	Metric metric.ID
	Ns     uint64
}

// Parse parses one --slo value, e.g. "latency=50us" or "1234:cycle=2ms".
func Parse(s string) (Bound, error) {
	var b Bound
	spec := strings.TrimSpace(s)
	if i := strings.IndexByte(spec, ':'); i >= 0 {
		id, err := strconv.ParseUint(spec[:i], 10, 32)
		if err != nil || id == 0 {
			return b, fmt.Errorf("SLO %q: %q is not a tid or pid (a positive number)", s, spec[:i])
		}
		b.ID = uint32(id)
		spec = spec[i+1:]
	}
	name, val, ok := strings.Cut(spec, "=")
	if !ok {
		return b, fmt.Errorf("SLO %q is not METRIC=TIME (e.g. latency=50us)", s)
	}
	m, err := metric.Parse(name)
	if err != nil {
		return b, fmt.Errorf("SLO %q: %v", s, err)
	}
	ns, err := units.ParseNs(val)
	if err != nil {
		return b, fmt.Errorf("SLO %q: %v", s, err)
	}
	if ns == 0 {
		return b, fmt.Errorf("SLO %q: the bound must be above zero", s)
	}
	b.Metric, b.Ns = m, ns
	return b, nil
}

// Set holds every bound of a run.
type Set struct {
	Default [metric.Count]uint64
	ByID    map[uint32][metric.Count]uint64
}

// Build folds bounds into a Set: per-id bounds start from the defaults.
func Build(bounds []Bound) Set {
	var s Set
	for _, b := range bounds {
		if b.ID == 0 {
			s.Default[b.Metric] = b.Ns
		}
	}
	for _, b := range bounds {
		if b.ID == 0 {
			continue
		}
		if s.ByID == nil {
			s.ByID = map[uint32][metric.Count]uint64{}
		}
		cur, ok := s.ByID[b.ID]
		if !ok {
			cur = s.Default
		}
		cur[b.Metric] = b.Ns
		s.ByID[b.ID] = cur
	}
	return s
}

package main

import (
	"fmt"
	"math"
	"sort"
)

// minShiftCoverage is the least confidence a paired shift's interval is
// given (shiftOf): 90%. With the cyclictest phase's 8 repetitions it is
// the 93% interval between the second lowest and the second highest
// difference.
const minShiftCoverage = 0.90

// shift is how much a configuration moved a figure against no monitor,
// from runs paired by repetition: each repetition runs every configuration
// once, in turn, so a burst of foreign load or a slow drift of the host
// lands on both runs of a pair alike.
//
// Median is the median of the paired differences (ns). Lo and Hi bound a
// distribution-free confidence interval for it: order statistics of the
// differences, covering the true median with probability Coverage whatever
// the host's noise looks like (the differences of a pair need only be
// independent of the other pairs'). N is the number of pairs; Coverage is 0
// when N is too small for an interval of minShiftCoverage.
type shift struct {
	Median, Lo, Hi float64
	Coverage       float64
	N              int
}

// shiftOf pairs the runs of c with those of base by repetition (index) and
// returns the shift of f over them.
func shiftOf(base, c []cyclicResult, f func(cyclicResult) float64) shift {
	n := min(len(base), len(c))
	d := make([]float64, n)
	for i := range n {
		d[i] = f(c[i]) - f(base[i])
	}
	sort.Float64s(d)
	s := shift{Median: median(d), N: n}
	// The interval [d(k), d(n+1-k)] (1-based) misses the median with
	// probability 2 P(Binomial(n, 1/2) < k): take the largest k whose
	// coverage is still minShiftCoverage or more.
	for k := 1; 2*k <= n; k++ {
		cov := 1 - 2*binomHalfCDF(n, k-1)
		if cov < minShiftCoverage {
			break
		}
		s.Lo, s.Hi, s.Coverage = d[k-1], d[n-k], cov
	}
	return s
}

// binomHalfCDF is P(Binomial(n, 1/2) <= k).
func binomHalfCDF(n, k int) float64 {
	p, c := 0.0, 1.0 // c: n choose i
	for i := 0; i <= k && i <= n; i++ {
		p += c
		c = c * float64(n-i) / float64(i+1)
	}
	return p / math.Pow(2, float64(n))
}

// verdict says whether the shift is within target (ns): met when the whole
// interval is, missed when none of it is, and not resolved when the
// interval holds the target, or too few pairs give no interval: the
// host's noise is then larger than what is asked, and one median would
// pass or fail by chance.
func (s shift) verdict(target float64) string {
	switch {
	case s.Coverage == 0:
		return fmt.Sprintf("not resolved (%d run(s) a configuration; 5 or more give an interval)", s.N)
	case s.Hi <= target:
		return "yes"
	case s.Lo > target:
		return "**no**"
	}
	return "not resolved (the interval holds the target)"
}

// String is the median and its interval, in microseconds.
func (s shift) String() string {
	if s.Coverage == 0 {
		return fmt.Sprintf("%+.1f us", s.Median/1e3)
	}
	return fmt.Sprintf("%+.1f us (%+.1f..%+.1f, %.0f%%)", s.Median/1e3, s.Lo/1e3, s.Hi/1e3, 100*s.Coverage)
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"
)

// cyclicResult is one cyclictest run, in ns.
type cyclicResult struct {
	Min, Avg, P50, P99, Max float64
	Cycles                  uint64
}

// readCyclic parses cyclictest --json (rt-tests 2.x): min/avg/max of thread
// 0 and its 1 us histogram, from which p99 comes (overflows count as the max).
func readCyclic(path string) (cyclicResult, error) {
	var doc struct {
		Thread map[string]struct {
			Histogram map[string]uint64 `json:"histogram"`
			Cycles    uint64            `json:"cycles"`
			Min       float64           `json:"min"`
			Max       float64           `json:"max"`
			Avg       float64           `json:"avg"`
		} `json:"thread"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return cyclicResult{}, err
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return cyclicResult{}, fmt.Errorf("%s: %w", path, err)
	}
	t, ok := doc.Thread["0"]
	if !ok || t.Cycles == 0 {
		return cyclicResult{}, fmt.Errorf("%s: no cycles of thread 0", path)
	}
	var us []int
	var total uint64
	for k, n := range t.Histogram {
		v, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		us = append(us, v)
		total += n
	}
	sort.Ints(us)
	quantile := func(q float64) float64 {
		need := uint64(q*float64(t.Cycles) + 0.999999)
		var acc uint64
		for _, v := range us {
			acc += t.Histogram[strconv.Itoa(v)]
			if acc >= need {
				return float64(v)
			}
		}
		return t.Max
	}
	return cyclicResult{Min: t.Min * 1000, Avg: t.Avg * 1000, P50: quantile(0.5) * 1000, P99: quantile(0.99) * 1000,
		Max: t.Max * 1000, Cycles: t.Cycles}, nil
}

// runCyclictest runs the bench's cyclictest (1 ms, FIFO 80, one thread on
// cpu, mlocked) for dur, its results in the JSON file js.
func runCyclictest(cpu int, dur time.Duration, js string, extra ...string) error {
	argv := append([]string{"cyclictest", "-m", "-p", "80", "-i", "1000", "-a", strconv.Itoa(cpu), "-t", "1", "-q",
		"-D", fmt.Sprintf("%ds", int(dur.Seconds()))}, extra...)
	out, err := run(append(argv, "--json="+js)...)
	if err != nil {
		return fmt.Errorf("cyclictest: %v: %s", err, tail(out, 300))
	}
	return nil
}

// stopThenRead stops the monitor r that watched a cyclictest run (which
// ended with runErr), then reads the run's results from js.
func stopThenRead(r *running, runErr error, js string) (cyclicResult, error) {
	if _, err := r.stop(); err != nil {
		return cyclicResult{}, err
	}
	if runErr != nil {
		return cyclicResult{}, runErr
	}
	return readCyclic(js)
}

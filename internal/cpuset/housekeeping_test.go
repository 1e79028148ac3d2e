package cpuset

import (
	"slices"
	"strings"
	"testing"
)

func TestHousekeeping(t *testing.T) {
	online := []int{0, 1, 2, 3}
	for _, c := range []struct {
		name    string
		watched []Watched
		want    []int
		reason  string
	}{
		{"nothing watched", nil, nil, "no task watched yet"},
		{"RT tasks pinned to 2-3", []Watched{{CPUs: []int{2}, RT: true}, {CPUs: []int{3}, RT: true}, {CPUs: []int{0, 1, 2, 3}}},
			[]int{0, 1}, "no watched real-time task"},
		{"no RT task: all watched tasks count", []Watched{{CPUs: []int{1, 2, 3}}}, []int{0}, "no watched task may"},
		{"RT tasks everywhere: the least loaded", []Watched{{CPUs: online, RT: true, LastCPU: 0}, {CPUs: online, RT: true, LastCPU: 1},
			{CPUs: online, RT: true, LastCPU: 0}, {CPUs: online, RT: true, LastCPU: 3}}, []int{2}, "CPU 2, where the fewest of them ran (0 of 4)"},
	} {
		got, reason, _ := Housekeeping(online, c.watched)
		if !slices.Equal(got, c.want) || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: %v (%s); want %v (%s)", c.name, got, reason, c.want, c.reason)
		}
	}
}

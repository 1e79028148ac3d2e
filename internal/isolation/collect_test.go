package isolation

import (
	"slices"
	"testing"
)

// A kernel has one family of IPI receipt tracepoints: x86's irq_vectors or
// arm64's ipi_entry/ipi_exit. The other's absence is not listed as a gap;
// both absent, both are.
func TestWithoutAlternative(t *testing.T) {
	vectors := ipiReceipts[0]
	for _, c := range []struct {
		name          string
		missing, want []string
	}{
		{"x86", []string{"ipi_entry", "ipi_exit", "tick_stop"}, []string{"tick_stop"}},
		{"arm64", append([]string{"tick_stop"}, vectors...), []string{"tick_stop"}},
		{"neither", append([]string{"ipi_entry", "ipi_exit"}, vectors...), append([]string{"ipi_entry", "ipi_exit"}, vectors...)},
		{"both", []string{"tick_stop"}, []string{"tick_stop"}},
	} {
		if got := withoutAlternative(c.missing); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
		}
	}
}

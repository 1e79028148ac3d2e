package workload

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CallIPIs is cpu's count of function-call IPIs in /proc/interrupts: CAL,
// every call-function vector the CPU took (arm64: the IPIn rows of
// "Function call interrupts" and "Single function call interrupts"). The
// tests that attribute IPIs compare with it. x86 counts a TLB shootdown
// both there (irq_call_count, at the vector) and in TLB (irq_tlb_count, in
// flush_tlb_func): TLB + CAL counted each shootdown twice (+71828 on CPU 1
// for 35572 shootdowns received, 2026-11-28).
func CallIPIs(cpu int) (uint64, error) {
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return 0, err
	}
	return callIPIs(string(b), cpu)
}

// callIPIs is CallIPIs on the text of /proc/interrupts.
func callIPIs(text string, cpu int) (uint64, error) {
	var n uint64
	seen := false
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) <= cpu+1 {
			continue
		}
		arm := strings.HasPrefix(f[0], "IPI") && strings.HasSuffix(l, "unction call interrupts")
		if f[0] != "CAL:" && !arm {
			continue
		}
		v, err := strconv.ParseUint(f[cpu+1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/interrupts %s: %w", f[0], err)
		}
		n, seen = n+v, true
	}
	if !seen {
		return 0, fmt.Errorf("/proc/interrupts has no function-call IPI row for CPU %d", cpu)
	}
	return n, nil
}

package timerlat

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Linux scheduling policies.
const (
	schedOther    = 0
	schedFIFO     = 1
	schedRR       = 2
	schedDeadline = 6
)

// Priority is the scheduling of the measuring threads, as rtla's -P:
// o:nice, r:prio, f:prio or d:runtime:period.
type Priority struct {
	Policy   uint32 // schedOther, schedFIFO, schedRR or schedDeadline
	Prio     int    // RT priority 1..99, or nice -20..19 for OTHER
	Runtime  uint64 // deadline runtime, ns
	Period   uint64 // deadline period, ns
	Original string // as given
}

// DefaultPriority is rtla's and cyclictest's usual choice: FIFO 95.
var DefaultPriority = Priority{Policy: schedFIFO, Prio: 95, Original: "f:95"}

// ParsePriority parses rtla's -P syntax.
func ParsePriority(s string) (Priority, error) {
	p := Priority{Original: s}
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return p, fmt.Errorf("priority %q: use o:nice, r:prio, f:prio or d:runtime:period", s)
	}
	switch kind {
	case "o", "r", "f":
		n, err := strconv.Atoi(rest)
		if err != nil {
			return p, fmt.Errorf("priority %q: %q is not a number", s, rest)
		}
		p.Prio = n
		if kind == "o" {
			p.Policy = schedOther
			if n < -20 || n > 19 {
				return p, fmt.Errorf("priority %q: SCHED_OTHER takes a nice value from -20 to 19", s)
			}
		} else {
			p.Policy = schedFIFO
			if kind == "r" {
				p.Policy = schedRR
			}
			if n < 1 || n > 99 {
				return p, fmt.Errorf("priority %q: real-time priorities go from 1 to 99", s)
			}
		}
	case "d":
		rt, per, ok := strings.Cut(rest, ":")
		if !ok {
			return p, fmt.Errorf("priority %q: SCHED_DEADLINE needs d:runtime:period", s)
		}
		var err error
		if p.Runtime, err = parseDLTime(rt); err != nil {
			return p, fmt.Errorf("priority %q: runtime %v", s, err)
		}
		if p.Period, err = parseDLTime(per); err != nil {
			return p, fmt.Errorf("priority %q: period %v", s, err)
		}
		if p.Runtime == 0 || p.Runtime > p.Period {
			return p, fmt.Errorf("priority %q: the runtime must be positive and at most the period", s)
		}
		p.Policy = schedDeadline
	default:
		return p, fmt.Errorf("priority %q: unknown policy %q (o, r, f or d)", s, kind)
	}
	return p, nil
}

// parseDLTime parses rtla's deadline times: ns by default, or us, ms, s.
func parseDLTime(s string) (uint64, error) {
	mult := uint64(1)
	for _, u := range []struct {
		suf string
		m   uint64
	}{{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a time (ns, or with us, ms, s)", s)
	}
	// 18446744074s used to wrap to a 290 ms period. The kernel refuses a
	// time with bit 63 set (__checkparam_dl): such a value was accepted
	// here and failed only once the run had started.
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large (at most %d ns)", s, int64(math.MaxInt64))
	}
	return n * mult, nil
}

// String prints the priority the way cyclictest and rtla users read it.
func (p Priority) String() string {
	switch p.Policy {
	case schedOther:
		return fmt.Sprintf("SCHED_OTHER nice %d", p.Prio)
	case schedFIFO:
		return fmt.Sprintf("SCHED_FIFO %d", p.Prio)
	case schedRR:
		return fmt.Sprintf("SCHED_RR %d", p.Prio)
	case schedDeadline:
		return fmt.Sprintf("SCHED_DEADLINE runtime %d ns period %d ns", p.Runtime, p.Period)
	}
	return "?"
}

// apply sets the calling thread's scheduling.
func (p Priority) apply() error {
	attr := unix.SchedAttr{Policy: p.Policy}
	switch p.Policy {
	case schedOther:
		attr.Nice = int32(p.Prio)
	case schedFIFO, schedRR:
		attr.Priority = uint32(p.Prio)
	case schedDeadline:
		attr.Runtime, attr.Deadline, attr.Period = p.Runtime, p.Period, p.Period
	}
	err := unix.SchedSetAttr(0, &attr, 0)
	switch {
	case err == nil:
		return nil
	case p.Policy == schedDeadline && (errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EPERM)):
		return fmt.Errorf("the kernel refused %s for a thread pinned to one CPU (%v): SCHED_DEADLINE needs an affinity spanning its root domain, i.e. an exclusive cpuset per measured CPU", p, err)
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("the kernel refused %s (%v): not enough deadline bandwidth left", p, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("setting %s: %v (needs root or CAP_SYS_NICE)", p, err)
	}
	return fmt.Errorf("setting %s: %v", p, err)
}

// cyclictestPrio is the P: column of cyclictest (0 for non-RT policies).
func (p Priority) cyclictestPrio() int {
	if p.Policy == schedFIFO || p.Policy == schedRR {
		return p.Prio
	}
	return 0
}

// Package sched names scheduling policies, priorities and task states the
// way real-time users read them (FIFO 80, OTHER nice 0, S, D, ...).
package sched

import "fmt"

// Linux scheduling policies.
const (
	Normal   = 0
	FIFO     = 1
	RR       = 2
	Batch    = 3
	Idle     = 5
	Deadline = 6
)

// PolicyName returns FIFO, RR, OTHER, BATCH, IDLE or DEADLINE.
func PolicyName(policy uint32) string {
	switch policy {
	case Normal:
		return "OTHER"
	case FIFO:
		return "FIFO"
	case RR:
		return "RR"
	case Batch:
		return "BATCH"
	case Idle:
		return "IDLE"
	case Deadline:
		return "DEADLINE"
	}
	return fmt.Sprintf("policy%d", policy)
}

// IsRT tells whether the policy is a real-time one.
func IsRT(policy uint32) bool { return policy == FIFO || policy == RR || policy == Deadline }

// UserPrio converts a kernel prio (0..99 RT, 100..139 normal, -1 deadline)
// to what chrt/ps show: the RT priority 1..99, or the nice value.
func UserPrio(kprio int) (value int, rt bool) {
	switch {
	case kprio < 0:
		return 0, true
	case kprio < 100:
		return 99 - kprio, true
	default:
		return kprio - 120, false
	}
}

// Describe renders a policy and kernel prio, e.g. "FIFO 80", "OTHER nice 0", "DEADLINE".
func Describe(policy uint32, kprio int) string {
	if policy < uint32(len(described)) && kprio >= 0 && kprio < len(described[0]) {
		return described[policy][kprio]
	}
	return describe(policy, kprio)
}

// described is Describe of the policies up to SCHED_EXT (7) at every
// kernel prio, made once: decoding a trace describes each event's tasks,
// and two Sprintfs an event were 0.12 s of the 0.29 s of CPU that watch's
// stop took at 1000 tracked threads.
var described = func() (t [8][140]string) {
	for p := range t {
		for k := range t[p] {
			t[p][k] = describe(uint32(p), k)
		}
	}
	return t
}()

func describe(policy uint32, kprio int) string {
	if policy == Deadline || kprio < 0 {
		return "DEADLINE"
	}
	v, rt := UserPrio(kprio)
	if rt {
		// A boosted normal task (priority inheritance) has an RT prio but not an RT policy.
		if !IsRT(policy) {
			return fmt.Sprintf("%s boosted to RT %d", PolicyName(policy), v)
		}
		return fmt.Sprintf("%s %d", PolicyName(policy), v)
	}
	return fmt.Sprintf("%s nice %d", PolicyName(policy), v)
}

// KPrioFromByte undoes the flight recorder's byte encoding (255 = deadline).
func KPrioFromByte(b uint8) int {
	if b == 255 {
		return -1
	}
	return int(b)
}

// Higher tells whether kernel prio a is a strictly higher priority than b.
func Higher(a, b int) bool { return a < b }

// StateLetters renders a raw task __state as ps does: R, S, D, T, t, X, Z, P, I, plus
// W for PREEMPT_RT's rtlock wait.
func StateLetters(state uint32) string {
	if state == 0 {
		return "R"
	}
	const (
		interruptible   = 0x1
		uninterruptible = 0x2
		stopped         = 0x4
		traced          = 0x8
		dead            = 0x10 | 0x80 // EXIT_DEAD, TASK_DEAD
		zombie          = 0x20
		parked          = 0x40
		noload          = 0x400
		rtlockWait      = 0x1000
	)
	switch {
	case state&rtlockWait != 0:
		return "D(rtlock)"
	case state&uninterruptible != 0 && state&noload != 0:
		return "I"
	case state&interruptible != 0:
		return "S"
	case state&uninterruptible != 0:
		return "D"
	case state&stopped != 0:
		return "T"
	case state&traced != 0:
		return "t"
	case state&parked != 0:
		return "P"
	case state&zombie != 0:
		return "Z"
	case state&dead != 0:
		return "X"
	}
	return fmt.Sprintf("0x%x", state)
}

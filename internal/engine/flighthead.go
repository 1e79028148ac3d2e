package engine

import "sort"

// nestGap is how many slots past the last written one ringHead still looks
// for written events: a program reserves its slot (rts_flight) and writes
// it a few instructions later, and one that an interrupt's program nested
// into leaves its slot unwritten while the nested one writes the next.
// Nesting is a few levels deep (task, softirq, hard IRQ, NMI).
const nestGap = 8

// ringHead returns the head of a CPU's flight ring (the sequence number
// after its newest event written) found in the mapped ring itself, from
// the head last seen: the slots from last on are binary searched for the
// first not yet written in this lap, then nestGap slots past it are
// checked for nested writes. ok is false when the ring lapped since last
// (the slot at last holds a newer event): the caller reads the head from
// the per-CPU state instead.
//
// About 20 slot reads instead of a per-CPU map lookup: that lookup, one
// a poll, was 18% of the agent's CPU at 400,000 switches a second (perf,
// stress-ng --switch 34), most of it cilium/ebpf unmarshalling the
// per-CPU values.
func ringHead(ring []Event, last uint64) (head uint64, ok bool) {
	n := uint64(len(ring))
	written := func(seq uint64) int32 { // 0: written in this lap, <0: not yet, >0: overwritten
		e := &ring[seq&(n-1)]
		d := int32(e.Seq - uint32(seq))
		if d == 0 && e.Type == 0 {
			return -1 // reserved, or never written (a zeroed slot)
		}
		return d
	}
	if written(last) > 0 {
		return 0, false
	}
	head = last + uint64(sort.Search(int(n), func(i int) bool { return written(last+uint64(i)) != 0 }))
	for seq, miss := head, 0; seq < last+n && miss < nestGap; seq++ {
		switch d := written(seq); {
		case d == 0:
			head, miss = seq+1, 0
		case d > 0:
			return 0, false // lapped while read
		default:
			miss++
		}
	}
	return head, true
}

package analysis

// CauseTIDs returns the threads the result names as the window's cause:
// the one that ran when the task should have (BlockingThread), and a
// priority inversion's lock owner and middle-priority preempters. The
// report shows them beside the task (report.Selection), without encoding
// the result to find them.
func (r *Result) CauseTIDs() []uint32 {
	var tids []uint32
	if r.BlockingThread != nil {
		tids = append(tids, r.BlockingThread.TID)
	}
	if inv := r.Inversion; inv != nil {
		tids = append(tids, inv.Owner.TID)
		for _, p := range inv.Preempters {
			tids = append(tids, p.TID)
		}
	}
	return tids
}

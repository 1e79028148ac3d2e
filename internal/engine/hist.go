package engine

// Histogram returns the metric's bucket counts (metric.Buckets of them,
// layout of metric.Bucket) in samples: the kernel keeps 16-bit buckets and
// halves them all when one is full (rts_hist_fold), counting the folds in
// HistShift, so each is scaled back here. Safe for concurrent use on
// distinct values; it reads m only.
func (m *MetricStats) Histogram() []uint32 {
	out := make([]uint32, len(m.Hist))
	shift := min(m.HistShift, 16) // a u32 holds 65535 << 16
	for i, c := range m.Hist {
		out[i] = uint32(c) << shift
	}
	return out
}

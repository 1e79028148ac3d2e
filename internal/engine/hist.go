package engine

// Histogram returns the metric's bucket counts (metric.Buckets of them,
// layout of metric.Bucket), a copy the caller may keep. Safe for
// concurrent use on distinct values; it reads m only.
func (m *MetricStats) Histogram() []uint32 {
	return append([]uint32(nil), m.Hist[:]...)
}

package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
)

// TestHistBucketTwin checks the BPF histogram bucket (rts_hist_bucket, its
// top-bit search without branches) against metric.Bucket: every power of
// two and its neighbours, the edges of each bucket, and random values.
func TestHistBucketTwin(t *testing.T) {
	tw := newTwin(t, nil)
	vals := []uint64{0, 1, 127, 128, 1023, 1024, 1025, math.MaxUint64}
	for s := 0; s < 64; s++ {
		p := uint64(1) << s
		vals = append(vals, p-1, p, p+1, p|p>>1, p|p>>3)
	}
	for b := 0; b < metric.Buckets; b++ {
		lo, hi := metric.BucketRange(b)
		vals = append(vals, lo, hi-1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		vals = append(vals, r.Uint64()>>r.UintN(64))
	}
	for _, v := range vals {
		if got, want := int(tw.run(tw.objs.TestHistBucket, v)), metric.Bucket(v); got != want {
			t.Errorf("bucket of %d: BPF %d, metric.Bucket %d", v, got, want)
		}
	}
}

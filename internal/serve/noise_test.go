package serve

import (
	"testing"

	"github.com/rtscope/rtscope/internal/engine"
)

// A target's noise parts by cause add up over its live and exited tasks,
// as counts and as seconds of their own time; a cause without any part has
// no series, nor a target without noise.
func TestNoiseByCauseSeries(t *testing.T) {
	x := NewExporter()
	a, b := task(1, "poller"), task(2, "poller")
	a.NoiseParts[engine.NoiseIRQ-1], a.NoiseNs[engine.NoiseIRQ-1] = 3, 30_000
	b.NoiseParts[engine.NoiseIRQ-1], b.NoiseNs[engine.NoiseIRQ-1] = 2, 20_000
	b.NoiseParts[engine.NoiseThrottle-1], b.NoiseNs[engine.NoiseThrottle-1] = 1, 50_000_000
	b.NoiseParts[engine.NoiseIPI-1], b.NoiseNs[engine.NoiseIPI-1] = 4, 2_000
	b.NoiseParts[engine.NoiseNMI-1], b.NoiseNs[engine.NoiseNMI-1] = 1, 3_000
	x.Exit(a)
	x.tick([]*engine.TaskStats{b, task(3, "sleeper", 1000)})
	fams := gather(t, x)
	got := map[string]float64{}
	for _, name := range []string{"rtscope_noise_parts_total", "rtscope_noise_part_seconds_total"} {
		f := fams[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
		for _, m := range f.Metric {
			var target, cause string
			for _, l := range m.Label {
				switch l.GetName() {
				case "target":
					target = l.GetValue()
				case "cause":
					cause = l.GetValue()
				}
			}
			got[name+" "+target+" "+cause] = m.Counter.GetValue()
		}
	}
	want := map[string]float64{
		"rtscope_noise_parts_total poller irq":               5,
		"rtscope_noise_parts_total poller throttling":        1,
		"rtscope_noise_part_seconds_total poller irq":        50e-6,
		"rtscope_noise_part_seconds_total poller throttling": 50e-3,
		"rtscope_noise_parts_total poller ipi":               4,
		"rtscope_noise_parts_total poller nmi":               1,
		"rtscope_noise_part_seconds_total poller ipi":        2e-6,
		"rtscope_noise_part_seconds_total poller nmi":        3e-6,
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, w := range want {
		if v, ok := got[k]; !ok || v < w*(1-1e-9) || v > w*(1+1e-9) {
			t.Errorf("%s = %v, want %v", k, v, w)
		}
	}
}

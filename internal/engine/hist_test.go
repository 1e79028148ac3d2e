package engine

import (
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/rtscope/rtscope/internal/metric"
)

// fill sets every settable number of v to a distinct value from *n on.
func fill(v reflect.Value, n *uint64) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).Name != "_" {
				fill(v.Field(i), n)
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		*n++
		v.SetUint(*n & (1<<(8*v.Type().Size()-1) - 1))
	case reflect.Int8, reflect.Int32, reflect.Int64:
		*n++
		v.SetInt(int64(*n & (1<<(8*v.Type().Size()-1) - 1)))
	}
}

// TestTaskStatsMirror: TaskStats has every field of the kernel's
// statistics, of the same type, and join copies each (a field added to
// struct rts_task_stats or rts_metric_stats and not here fails).
func TestTaskStatsMirror(t *testing.T) {
	var k bpfRtsTaskStats
	var n uint64
	fill(reflect.ValueOf(&k).Elem(), &n)
	s, _ := histCarries{}.join(&k)
	check := func(kv, sv reflect.Value, skip map[string]bool) {
		for i := range kv.NumField() {
			f := kv.Type().Field(i)
			if f.Name == "_" || skip[f.Name] {
				continue
			}
			g := sv.FieldByName(f.Name)
			if !g.IsValid() || g.Type() != f.Type {
				t.Errorf("%s.%s (%v): missing from %s or of another type", kv.Type().Name(), f.Name, f.Type, sv.Type().Name())
				continue
			}
			if !reflect.DeepEqual(g.Interface(), kv.Field(i).Interface()) {
				t.Errorf("%s.%s: join copied %v, want %v", sv.Type().Name(), f.Name, g.Interface(), kv.Field(i).Interface())
			}
		}
	}
	check(reflect.ValueOf(k), reflect.ValueOf(*s), map[string]bool{"M": true})
	for i := range k.M {
		check(reflect.ValueOf(k.M[i]), reflect.ValueOf(s.M[i]), map[string]bool{"Hist": true, "HistLost": true})
		for b, lo := range k.M[i].Hist {
			if s.M[i].Hist[b] != uint32(lo) {
				t.Fatalf("metric %d bucket %d: %d, want %d (no carry)", i, b, s.M[i].Hist[b], lo)
			}
		}
		if s.M[i].HistLost != uint64(k.M[i].HistLost)<<16 {
			t.Errorf("metric %d: HistLost %d, want %d carries of 65536", i, s.M[i].HistLost, k.M[i].HistLost)
		}
	}
}

// TestHistCarriesJoin: carries go to their task, metric and bucket; a
// histogram short of its count by half a carry or more (lost carries
// aside) is pending, fewer samples apart are samples being counted.
func TestHistCarriesJoin(t *testing.T) {
	b := uint64(metric.Bucket(5000))
	task := func(id, count uint64, lo uint16, lost uint32) *bpfRtsTaskStats {
		k := &bpfRtsTaskStats{Id: id}
		m := &k.M[metric.Jitter]
		m.Count, m.Hist[b], m.HistLost = count, lo, lost
		return k
	}
	c := histCarries{}
	for range 3 {
		c.add(&Notice{Type: noticeHistCarry, Id: 7, Metric: uint32(metric.Jitter), Value: b})
	}
	c.add(&Notice{Type: noticeHistCarry, Id: 8, Metric: uint32(metric.Jitter), Value: b})
	c.add(&Notice{Type: noticeHistCarry, Id: 7, Metric: uint32(metric.Count), Value: b})   // no such metric
	c.add(&Notice{Type: noticeHistCarry, Id: 7, Metric: 0, Value: uint64(metric.Buckets)}) // no such bucket
	for _, tc := range []struct {
		name        string
		k           *bpfRtsTaskStats
		hist, lost  uint64
		wantPending bool
	}{
		{"three carries", task(7, 3<<16+5, 5, 0), 3<<16 + 5, 0, false},
		{"another task's carry", task(8, 1<<16+1, 1, 0), 1<<16 + 1, 0, false},
		{"samples being counted", task(9, 1000, 990, 0), 990, 0, false},
		{"carry in the ring", task(9, 1<<16+3, 3, 0), 3, 0, true},
		{"carry lost", task(9, 1<<16+3, 3, 1), 3, 1 << 16, false},
		{"lost and one in the ring", task(9, 2<<16+3, 3, 1), 3, 1 << 16, true},
	} {
		s, pending := c.join(tc.k)
		m := s.M[metric.Jitter]
		var total uint64
		for _, n := range m.Hist {
			total += uint64(n)
		}
		if total != tc.hist || m.Hist[b] != uint32(tc.hist) || m.HistLost != tc.lost || pending != tc.wantPending {
			t.Errorf("%s: histogram %d (bucket %d), lost %d, pending %v; want %d, %d, %v",
				tc.name, total, m.Hist[b], m.HistLost, pending, tc.hist, tc.lost, tc.wantPending)
		}
	}
}

// TestStatsJoinsCarries: Stats and AllStats return whole bucket counts
// (the kernel's low 16 bits and the carries taken), and Forget drops a
// task's carries with its statistics. Loads the engine, attaches nothing.
func TestStatsJoinsCarries(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	e, err := Load(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	b := metric.Bucket(700)
	var k bpfRtsTaskStats
	k.Id = 42
	k.M[metric.Latency].Count, k.M[metric.Latency].Hist[b] = 2<<16+9, 9
	if err := e.objs.Stats.Put(k.Id, &k); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.carries.add(&Notice{Type: noticeHistCarry, Id: 42, Metric: uint32(metric.Latency), Value: uint64(b)})
	}
	s, err := e.Stats(42)
	if err != nil {
		t.Fatal(err)
	}
	all, err := e.AllStats()
	if err != nil || len(all) != 1 {
		t.Fatalf("AllStats: %d tasks, %v; want 1", len(all), err)
	}
	for _, got := range []*TaskStats{s, all[0]} {
		if h := got.M[metric.Latency].Hist[b]; h != 2<<16+9 {
			t.Errorf("bucket of 700 ns %d, want %d", h, 2<<16+9)
		}
	}
	e.Forget(42)
	if len(e.carries) != 0 {
		t.Errorf("carries of %d tasks kept after Forget", len(e.carries))
	}
}

// TestUnpublishedStatsUnseen: an entry BPF has created but not yet
// published (id 0: its identity is being written, rts_track_publish) is
// not returned by AllStats, and Stats answers it does not exist yet.
func TestUnpublishedStatsUnseen(t *testing.T) {
	e := loadedEngine(t, Config{})
	put := func(key uint64, k bpfRtsTaskStats) {
		if err := e.objs.Stats.Put(key, &k); err != nil {
			t.Fatal(err)
		}
	}
	put(7, bpfRtsTaskStats{Tid: 70})        // unpublished
	put(8, bpfRtsTaskStats{Id: 8, Tid: 80}) // published
	all, err := e.AllStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Id != 8 {
		t.Errorf("AllStats returned %d tasks (first %+v), want only id 8", len(all), all)
	}
	if _, err := e.Stats(7); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("Stats of the unpublished entry: %v, want ErrKeyNotExist", err)
	}
	if s, err := e.Stats(8); err != nil || s.Tid != 80 {
		t.Errorf("Stats of the published entry: %+v, %v", s, err)
	}
}

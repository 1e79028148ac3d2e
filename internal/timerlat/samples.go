package timerlat

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/ksym"
	"github.com/rtscope/rtscope/internal/tpformat"
)

// Contexts of a timer latency sample, in rtla's order.
const (
	IRQ = iota
	Thread
	User
	nCtx
)

var ctxNames = [nCtx]string{"irq", "thread", "user"}

// Sample is one timer release of a measuring thread, exactly as the engine
// measured it. Valid tells which contexts belong to this release.
type Sample struct {
	CPU    int
	TID    int
	Seq    uint64 // the thread's release number, from 1
	Expiry uint64 // the timer's expiry, CLOCK_MONOTONIC ns
	Valid  [nCtx]bool
	Value  [nCtx]uint64 // ns
}

// stream reads the per-sample ring of bpf/timerlat.bpf.c.
type stream struct {
	objs   tlMaps
	coll   *ebpf.Collection // holds the one program this engine needs
	link   link.Link
	reader *ringbuf.Reader
	dec    decoder
}

// openStream loads the per-sample program beside eng, sharing its stats map.
// samplesPerSec sizes the ring for about 10 s of samples (it is drained every
// fraction of a second).
func openStream(eng *engine.Engine, samplesPerSec int) (*stream, error) {
	spec, err := loadTl()
	if err != nil {
		return nil, err
	}
	statsMap := eng.StatsMap()
	info, err := statsMap.Info()
	if err != nil {
		return nil, fmt.Errorf("reading the engine's stats map: %w", err)
	}
	// Follow the engine's sizing, whatever it is now.
	spec.Maps["stats"].MaxEntries = info.MaxEntries
	spec.Maps["stats"].Flags = info.Flags

	size := uint32(256 * 1024)
	for size < 1<<26 && int(size) < samplesPerSec*int(unsafe.Sizeof(tlTlSample{}))*10 {
		size <<= 1
	}
	spec.Maps["tl_samples"].MaxEntries = size

	syms, _ := ksym.Kernel()
	wake := syms.Addr("hrtimer_wakeup")
	if wake == 0 {
		return nil, errors.New("hrtimer_wakeup is not in /proc/kallsyms: timer releases cannot be recognised")
	}
	if err := spec.Variables["tl_hrtimer_wakeup"].Set(wake); err != nil {
		return nil, err
	}
	// Only the program of the engine's kind is loaded: the tp_btf one
	// needs kernel BTF, the classic one the record's layout.
	prog := "tl_on_hrtimer_start"
	classic := !eng.Features.Has(engine.FeatureKernelBTF)
	if classic {
		prog = "tl_on_hrtimer_start_classic"
		f, err := tpformat.ReadFormat("timer", "hrtimer_start")
		if err != nil {
			return nil, err
		}
		fd, ok := f.Fields["function"]
		if !ok || fd.Size != 8 {
			return nil, errors.New("tracepoint timer/hrtimer_start has no 8-byte function field, which timerlat needs")
		}
		if err := spec.Variables["tl_off_function"].Set(fd.Offset); err != nil {
			return nil, err
		}
	}
	for name := range spec.Programs {
		if name != prog {
			delete(spec.Programs, name)
		}
	}
	s := &stream{dec: decoder{prev: map[uint32][nCtx]uint64{}}}
	opts := eng.BTFOptions()
	opts.MapReplacements = map[string]*ebpf.Map{"stats": statsMap}
	s.coll, err = ebpf.NewCollectionWithOptions(spec, opts)
	if err != nil {
		return nil, fmt.Errorf("loading the timerlat sample program: %w", err)
	}
	if err := s.coll.Assign(&s.objs); err != nil {
		s.Close()
		return nil, err
	}
	if classic {
		s.link, err = link.Tracepoint("timer", "hrtimer_start", s.coll.Programs[prog], nil)
	} else {
		s.link, err = link.AttachTracing(link.TracingOptions{Program: s.coll.Programs[prog]})
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("attaching the timerlat sample program: %w", err)
	}
	s.reader, err = ringbuf.NewReader(s.objs.TlSamples)
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// add starts copying the samples of a measuring thread.
func (s *stream) add(tid uint32, cpu int, statsID uint64) error {
	return s.objs.TlThreads.Put(tid, tlTlThread{StatsId: statsID, Cpu: uint32(cpu)})
}

// drain returns the samples queued so far (BPF never wakes us up).
func (s *stream) drain(fn func(Sample)) error {
	var rec ringbuf.Record
	s.reader.SetDeadline(time.Now())
	for {
		err := s.reader.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(rec.RawSample) < int(unsafe.Sizeof(tlTlSample{})) {
			continue
		}
		raw := *(*tlTlSample)(unsafe.Pointer(&rec.RawSample[0]))
		fn(s.dec.decode(raw.Cpu, raw.Tid, raw.Count, raw.Value, raw.End))
	}
}

// ringLost is the number of samples BPF could not queue (ring full).
func (s *stream) ringLost() uint64 {
	var per []uint64
	var total uint64
	if err := s.objs.TlLost.Lookup(uint32(0), &per); err == nil {
		for _, v := range per {
			total += v
		}
	}
	return total
}

func (s *stream) Close() {
	if s.reader != nil {
		s.reader.Close()
	}
	if s.link != nil {
		s.link.Close()
	}
	s.objs.Close() //nolint:errcheck // BPF objects: closing frees them whatever close returns
	if s.coll != nil {
		s.coll.Close()
	}
}

// decoder turns the copies of the engine's counters into samples: a context
// belongs to the release when its count moved since the previous copy and
// its window starts at the release's timer expiry.
type decoder struct {
	prev map[uint32][nCtx]uint64
	// Lost counts releases whose value of a context could not be copied
	// (copy missed, or the context not measured for that release).
	Lost [nCtx]uint64
}

func (d *decoder) decode(cpu, tid uint32, count, value, end [3]uint64) Sample {
	p := d.prev[tid]
	d.prev[tid] = count
	s := Sample{CPU: int(cpu), TID: int(tid), Seq: count[IRQ]}
	releases := count[IRQ] - p[IRQ]
	if count[IRQ] < p[IRQ] || releases == 0 {
		return s
	}
	s.Valid[IRQ] = true
	s.Value[IRQ] = value[IRQ]
	d.Lost[IRQ] += releases - 1
	expiry := end[IRQ] - value[IRQ]
	s.Expiry = expiry
	for c := Thread; c < nCtx; c++ {
		// The latest value is this release's when its window starts at
		// the same expiry (an IRQ latency of 0 hides the exact expiry:
		// then the count must have moved by exactly one).
		moved := count[c] - p[c]
		if count[c] > p[c] && (end[c]-value[c] == expiry || (value[IRQ] == 0 && moved == 1)) {
			s.Valid[c] = true
			s.Value[c] = value[c]
			d.Lost[c] += releases - 1
		} else {
			d.Lost[c] += releases
		}
	}
	return s
}

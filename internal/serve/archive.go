package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/outfile"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// DefaultArchiveBytes caps the archive (--archive-max): 64 MiB holds some
// hundreds of windows of 2000 events (~100-300 KiB of JSON each).
const DefaultArchiveBytes = 64 << 20

// DefaultViolationGap is the least time between two archived violation
// windows of one target and metric (--archive-violation-gap): a host
// violating its SLO all day writes a window every 10 s per series, not
// one per violation.
const DefaultViolationGap = 10 * time.Second

// archiveQueue bounds the windows waiting to be written: the session
// never waits for the disk; beyond it windows are dropped and counted.
const archiveQueue = 16

// ArchivedWindow is one archived window: a new worst case of a target
// (kind "worst") or an SLO violation (kind "violation"), with the
// analysis' verdict. Summaries (GET /v1/windows) leave Window out.
type ArchivedWindow struct {
	Name    string       `json:"name"` // file name, the key of GET /v1/windows/NAME
	Time    time.Time    `json:"time"`
	Kind    string       `json:"kind"`
	Target  string       `json:"target"` // the task's name, as the metrics' target label
	TID     uint32       `json:"tid"`
	PID     uint32       `json:"pid"`
	Metric  string       `json:"metric"`
	ValueNs uint64       `json:"value_ns"`
	Verdict string       `json:"verdict"`
	Cause   string       `json:"cause"`
	Culprit string       `json:"culprit,omitempty"`
	Bytes   int64        `json:"bytes"`
	Window  *trace.Trace `json:"window,omitempty"`
}

// Archive keeps worst-case and violation windows on disk, bounded: each
// is a JSON file written atomically (internal/outfile: a reader or a crash
// sees a whole file or none), and the oldest are removed so that the
// total stays within MaxBytes. A window bigger than MaxBytes is dropped.
//
// Concurrency: Add runs on the watch session's goroutine and only queues;
// one writer goroutine writes and rotates; List and Get are safe from any
// goroutine (the index is guarded by mu).
type Archive struct {
	dir      string
	maxBytes int64
	gap      time.Duration
	// session goroutine only
	worst    map[string]uint64    // target/metric -> worst value archived
	lastViol map[string]time.Time // target/metric -> last violation archived
	queue    chan *ArchivedWindow
	done     chan struct{}
	pending  sync.WaitGroup // windows queued and not yet written (settle)

	mu      sync.Mutex
	index   []*ArchivedWindow // oldest first, without Window
	total   int64
	dropped uint64 // queue full, too big, or not written
	err     error  // the last write error, reported by List
}

// OpenArchive opens (creating, mode 0700: windows name tasks and kernel
// stacks) the archive in dir, indexing the windows already there, and
// starts its writer; Close stops it.
func OpenArchive(dir string, maxBytes int64, gap time.Duration) (*Archive, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("--archive-max %d: the archive's size cap must be positive", maxBytes)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--archive %s: %w", dir, err)
	}
	a := &Archive{dir: dir, maxBytes: maxBytes, gap: gap, worst: map[string]uint64{}, lastViol: map[string]time.Time{},
		queue: make(chan *ArchivedWindow, archiveQueue), done: make(chan struct{})}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--archive %s: %w", dir, err)
	}
	for _, e := range ents {
		if !archiveName(e.Name()) {
			continue
		}
		w, err := a.read(e.Name())
		if err != nil {
			continue // not ours, or damaged by hand: left alone, not counted
		}
		w.Window = nil
		a.index = append(a.index, w)
		a.total += w.Bytes
		// A restarted agent archives a target's worst again only beyond it.
		if w.Kind == "worst" {
			k := w.Target + "/" + w.Metric
			a.worst[k] = max(a.worst[k], w.ValueNs)
		}
	}
	slices.SortFunc(a.index, func(x, y *ArchivedWindow) int { return strings.Compare(x.Name, y.Name) })
	a.mu.Lock()
	a.rotate()
	a.mu.Unlock()
	go a.writer()
	return a, nil
}

// archiveName tells an archive file: NANOS-KIND-METRIC.json, no dot first
// (outfile's temporary files start with one).
func archiveName(n string) bool {
	return strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".")
}

// Add is watch.WindowObserver.Window: it archives a target's new worst case, and a
// violation unless one of that target and metric was archived less than
// the gap ago. Session goroutine only.
func (a *Archive) Add(worst bool, t *report.Task, m metric.ID, value uint64, get func() (*trace.Trace, report.Explanation)) {
	k := t.Comm + "/" + m.String()
	now := time.Now()
	kind := "violation"
	if worst {
		if value <= a.worst[k] {
			return // a task's new maximum, not the target's
		}
		a.worst[k] = value
		kind = "worst"
	} else {
		if last, ok := a.lastViol[k]; ok && now.Sub(last) < a.gap {
			return
		}
		a.lastViol[k] = now
	}
	tr, e := get()
	w := &ArchivedWindow{Time: now, Kind: kind, Target: t.Comm, TID: t.TID, PID: t.PID, Metric: m.String(), ValueNs: value,
		Verdict: e.Verdict, Cause: e.Cause, Culprit: e.Culprit, Window: tr}
	w.Name = fmt.Sprintf("%019d-%s-%s.json", now.UnixNano(), kind, m)
	a.pending.Add(1)
	select {
	case a.queue <- w:
	default:
		a.pending.Done()
		a.mu.Lock()
		a.dropped++
		a.mu.Unlock()
	}
}

// settle waits until every queued window is written (tests: the queue's
// drops then depend on nothing but what was added).
func (a *Archive) settle() { a.pending.Wait() }

// Close writes what is queued and stops the writer.
func (a *Archive) Close() {
	close(a.queue)
	<-a.done
}

func (a *Archive) writer() {
	defer close(a.done)
	for w := range a.queue {
		n, err := a.write(w)
		a.mu.Lock()
		switch {
		case err != nil:
			a.dropped++
			a.err = err
		case n > a.maxBytes:
			a.dropped++
			_ = os.Remove(filepath.Join(a.dir, w.Name)) // over the cap on its own
		default:
			w.Window, w.Bytes = nil, n
			a.index = append(a.index, w)
			a.total += n
			a.rotate()
		}
		a.mu.Unlock()
		a.pending.Done()
	}
}

// write writes w atomically and returns its size.
func (a *Archive) write(w *ArchivedWindow) (int64, error) {
	f, err := outfile.Create(filepath.Join(a.dir, w.Name))
	if err != nil {
		return 0, err
	}
	cw := &countWriter{}
	if err := f.Fill(func(out io.Writer) error {
		return json.NewEncoder(io.MultiWriter(out, cw)).Encode(w)
	}); err != nil {
		return 0, err
	}
	return cw.n, nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// rotate removes the oldest windows until the total is within the cap.
// Called with mu held.
func (a *Archive) rotate() {
	for a.total > a.maxBytes && len(a.index) > 0 {
		old := a.index[0]
		if err := os.Remove(filepath.Join(a.dir, old.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			a.err = err
			return // counted as still there: the cap is not silently exceeded
		}
		a.index = a.index[1:]
		a.total -= old.Bytes
	}
}

// ArchiveList is GET /v1/windows: the windows, newest first, without
// their events.
type ArchiveList struct {
	Dir      string            `json:"dir"`
	MaxBytes int64             `json:"max_bytes"`
	Bytes    int64             `json:"bytes"`
	Dropped  uint64            `json:"dropped"` // not archived: queue full, over the cap alone, or a write error
	Error    string            `json:"error,omitempty"`
	Windows  []*ArchivedWindow `json:"windows"`
}

// List returns the archive's summaries.
func (a *Archive) List() *ArchiveList {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := &ArchiveList{Dir: a.dir, MaxBytes: a.maxBytes, Bytes: a.total, Dropped: a.dropped, Windows: []*ArchivedWindow{}}
	if a.err != nil {
		l.Error = a.err.Error()
	}
	for i := len(a.index) - 1; i >= 0; i-- {
		w := *a.index[i]
		l.Windows = append(l.Windows, &w)
	}
	return l
}

// Get returns the archived window name with its events.
func (a *Archive) Get(name string) (*ArchivedWindow, error) {
	a.mu.Lock()
	known := slices.ContainsFunc(a.index, func(w *ArchivedWindow) bool { return w.Name == name })
	a.mu.Unlock()
	if !known {
		return nil, fmt.Errorf("no archived window %q (rtscope ctl windows lists them)", name)
	}
	return a.read(name)
}

func (a *Archive) read(name string) (*ArchivedWindow, error) {
	b, err := os.ReadFile(filepath.Join(a.dir, name))
	if err != nil {
		return nil, err
	}
	var w ArchivedWindow
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("archived window %s: %w", name, err)
	}
	w.Name, w.Bytes = name, int64(len(b))
	return &w, nil
}

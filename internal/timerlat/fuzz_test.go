package timerlat

import (
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/rtscope/rtscope/internal/units"
)

// FuzzParsePriority checks -P on any value: an accepted priority is in its
// policy's range (nice -20..19, RT 1..99, a deadline runtime within its
// period), names its policy when printed, and reads back the same from
// what was given; a refused one gets one sentence that quotes the input.
func FuzzParsePriority(f *testing.F) {
	for _, s := range []string{"f:95", "r:1", "o:-20", "o:19", "f:0", "f:100", "o:20", "d:100us:1ms", "d:1ms:1ms", "d:2ms:1ms",
		"d:0:1ms", "d:1:18446744074s", "d:18446744073709551615:18446744073709551615", "x:1", "f:", "f", "d:1ms", "f:+5", "f:1e2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePriority(s)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, strconv.Quote(s)) || strings.Contains(msg, "\n") {
				t.Fatalf("ParsePriority(%q): error %q is not one line quoting the input", s, msg)
			}
			return
		}
		switch p.Policy {
		case schedOther:
			if p.Prio < -20 || p.Prio > 19 {
				t.Fatalf("ParsePriority(%q) = %+v: nice out of range", s, p)
			}
		case schedFIFO, schedRR:
			if p.Prio < 1 || p.Prio > 99 {
				t.Fatalf("ParsePriority(%q) = %+v: RT priority out of range", s, p)
			}
		case schedDeadline:
			if p.Runtime == 0 || p.Runtime > p.Period {
				t.Fatalf("ParsePriority(%q) = %+v: runtime not within its period", s, p)
			}
			if p.Period > math.MaxInt64 {
				t.Fatalf("ParsePriority(%q) = %+v: a period the kernel refuses (bit 63 set)", s, p)
			}
		default:
			t.Fatalf("ParsePriority(%q) = %+v: unknown policy", s, p)
		}
		if strings.Contains(p.String(), "?") || p.Original != s {
			t.Fatalf("ParsePriority(%q) = %+v prints as %q", s, p, p)
		}
		if again, err := ParsePriority(s); err != nil || again != p {
			t.Fatalf("ParsePriority(%q) is not deterministic: %+v then %+v (%v)", s, p, again, err)
		}
	})
}

// FuzzParseArgs checks the whole timerlat command line (the value's
// words are the arguments): whatever is accepted is a runnable session
// (every limit of the options held, a saved trace has a stop threshold to
// save), and every refusal is one line.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"", "top", "hist -b 2 -E 100", "-c 0-1 -p 100 -P f:90 -d 10s", "-a 50", "-i 10 -T 20 -t x.txt",
		"-t", "--aa-only 30 --no-aa", "hist --no-irq --no-thread --no-user", "--dma-latency 0", "--dma-latency 99999",
		"-p 5", "-p 18446744073709551615", "--on-threshold continue", "-i 10 --on-threshold signal,num=USR1,pid=parent",
		"--on-end continue", "hist --cyclictest -b 2", "top -E 10", "-k", "extra", "--json - --cyclictest", "-h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, help, err := ParseArgs(strings.Fields(s), io.Discard)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseArgs(%q): error %q is not one line", s, err)
			}
			return
		}
		if help {
			return
		}
		switch {
		case o.Mode != "top" && o.Mode != "hist":
			t.Fatalf("ParseArgs(%q): mode %q", s, o.Mode)
		case o.PeriodUs < minPeriodUs || o.PeriodUs > maxPeriodUs:
			t.Fatalf("ParseArgs(%q): period %d us", s, o.PeriodUs)
		case o.Duration < 0 || o.Duration > units.MaxDuration:
			t.Fatalf("ParseArgs(%q): duration %v", s, o.Duration)
		case o.IRQStopUs > maxStopUs || o.ThreadStopUs > maxStopUs:
			t.Fatalf("ParseArgs(%q): thresholds %d, %d us", s, o.IRQStopUs, o.ThreadStopUs)
		case o.DMALatency < -1 || o.DMALatency > maxDMALatency:
			t.Fatalf("ParseArgs(%q): dma latency %d", s, o.DMALatency)
		case o.BucketUs < 1 || o.BucketUs > maxBucket || o.Entries < minEntries || o.Entries > maxEntries:
			t.Fatalf("ParseArgs(%q): buckets %d x %d", s, o.BucketUs, o.Entries)
		case (o.TraceFile != "" || o.PerfettoFile != "" || len(o.OnThreshold) > 0) && o.IRQStopUs == 0 && o.ThreadStopUs == 0:
			t.Fatalf("ParseArgs(%q): a trace, Perfetto file or threshold action without a stop threshold", s)
		case o.NoIRQ && o.NoThread && o.NoUser:
			t.Fatalf("ParseArgs(%q): nothing left to show", s)
		}
	})
}

package engine

import (
	"testing"
)

// BenchmarkAgentReads: what the agent reads from the engine every tick and
// every poll, with 100 tracked tasks' statistics (written from user space:
// the programs are loaded, not attached).
func BenchmarkAgentReads(b *testing.B) {
	e := loadWithStats(b, Config{Trace: true, SleepStacks: true, StackMinWait: DefaultStackMinWait}, 100)
	b.Run("AllStats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if all, err := e.AllStats(); err != nil || len(all) != 100 {
				b.Fatal(len(all), err)
			}
		}
	})
	b.Run("Counters", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.Counters()
		}
	})
	b.Run("MemoryBytes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.MemoryBytes()
		}
	})
	b.Run("ProgramStats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := e.ProgramStats(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Heads", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Heads(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

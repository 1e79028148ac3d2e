// Package timerlat is `rtscope timerlat top|hist`: the timer latency of
// every CPU, as rtla timerlat and cyclictest measure it, on any kernel with
// BPF (no timerlat tracer). One pinned measuring thread per CPU (worker.go)
// sleeps on an absolute-time periodic timer; the engine measures each
// release in the kernel, in three parts from the timer's expiry (IRQ,
// Thread and Ret user latency), and timerlat.bpf.c streams every sample to
// user space (samples.go). The package parses rtla's options (options.go),
// runs the measurement as a tool of a session (run.go), stops at a
// threshold and explains the window cut there, as rtla's auto-analysis,
// prints rtla's and cyclictest's layouts (render.go) and JSON (json.go),
// and runs the --on-threshold and --on-end actions (actions.go).
package timerlat

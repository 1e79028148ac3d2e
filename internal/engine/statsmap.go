package engine

import "github.com/cilium/ebpf"

// StatsMap is the per-task statistics map, for programs loaded beside the
// engine that read it (rtscope timerlat's per-sample stream).
func (e *Engine) StatsMap() *ebpf.Map { return e.objs.Stats }

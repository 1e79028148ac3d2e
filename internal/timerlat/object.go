package timerlat

import "github.com/rtscope/rtscope/internal/engine"

// Object is timerlat's BPF object (the sample stream) and its hash, for
// rtscope version.
func Object() engine.Object { return engine.ObjectHash("timerlat.bpf.o (timerlat samples)", _TlBytes) }

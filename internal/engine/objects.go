package engine

import (
	"crypto/sha256"
	"encoding/hex"
)

// Object names one BPF object compiled into the binary and the SHA-256 of
// its bytes, so that two builds can be told apart by what they load, not
// only by their version string (rtscope version).
type Object struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// ObjectHash returns the Object for the bytes of a bpf2go object.
func ObjectHash(name string, b []byte) Object {
	sum := sha256.Sum256(b)
	return Object{Name: name, SHA256: hex.EncodeToString(sum[:])}
}

// Objects lists the engine's objects: the tp_btf engine and the classic
// one, each with its variant inlined for kernels before 5.12. Safe for
// concurrent use: it reads only the embedded bytes.
func Objects() []Object {
	return []Object{
		ObjectHash("rtscope.bpf.o (btf engine)", _BpfBytes),
		ObjectHash("rtscope.bpf.o inlined (btf engine, kernels < 5.12)", _BpfinlineBytes),
		ObjectHash("classic.bpf.o (classic engine)", _ClassicBytes),
		ObjectHash("classic.bpf.o inlined (classic engine, kernels < 5.12)", _ClassicinlineBytes),
	}
}

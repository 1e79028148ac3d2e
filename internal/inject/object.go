package inject

import (
	"crypto/sha256"
	"encoding/hex"
)

// ObjectSHA256 is the SHA-256 of the fault injectors' BPF object, for
// rtscope version (inject does not import the engine).
func ObjectSHA256() string {
	sum := sha256.Sum256(_InjectBytes)
	return hex.EncodeToString(sum[:])
}

package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// ProgramHash is a program's identity: the hex SHA-256 of its MIL text and
// weight blob, each preceded by its length so that no two (MIL, blob)
// pairs collide by concatenation. Compile caches key on it, and the darwin
// device names the program's files after it (the framework's own
// identifier ignores the weights' bytes).
func ProgramHash(mil, blob []byte) string {
	h := sha256.New()
	var n [8]byte
	for _, b := range [][]byte{mil, blob} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

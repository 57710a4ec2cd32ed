package domain

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashToken is how bearer tokens are kept: only their SHA-256 enters the log.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

package harness

import (
	"encoding/json"
)

// Deref renders a snapshot with pointer fields followed, for comparison.
func Deref(s Snapshot) string {
	b, _ := json.Marshal(s)
	return string(b)
}

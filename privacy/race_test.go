//go:build race

package privacy

// raceEnabled: this test binary runs under the race detector, whose
// sync.Pool drops a quarter of what is put back, so pooled buffers are
// sometimes made anew.
const raceEnabled = true

//go:build race

package process

// raceEnabled: this test binary runs under the race detector, and so does
// the node the kill -9 tests start (proc.Binary).
const raceEnabled = true

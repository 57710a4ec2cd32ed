//go:build !race

package process

// raceEnabled: this test binary runs without the race detector.
const raceEnabled = false

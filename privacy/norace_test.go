//go:build !race

package privacy

// raceEnabled: this test binary runs without the race detector.
const raceEnabled = false

package main

import "testing"

// The idle row waits for the start-up work to run out: a falling CPU rate
// (36.9 ms/s right after start, then 20, 12, 7) is not settled until three
// steps agree.
func TestIdleSettled(t *testing.T) {
	for _, c := range []struct {
		rates []float64
		want  bool
	}{
		{nil, false},
		{[]float64{6, 6}, false},
		{[]float64{36.9, 20, 12}, false},
		{[]float64{36.9, 20, 12, 7.2}, false},
		{[]float64{36.9, 20, 12, 7.2, 6.1, 6.8}, true},
		{[]float64{7, 7.5, 6.4}, true},
		{[]float64{7, 12, 7}, false},
	} {
		if got := idleSettled(c.rates); got != c.want {
			t.Errorf("idleSettled(%v) = %v, want %v", c.rates, got, c.want)
		}
	}
}

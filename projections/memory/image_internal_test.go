package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sorted orders the collected rows by key in place, for every shape of
// permutation: none, one cycle, many cycles, random.
func TestSortedOrdersInPlace(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 10, 1000} {
		for _, shape := range []string{"sorted", "reversed", "random"} {
			m := map[int64]string{}
			for i := 0; i < n; i++ {
				m[int64(i)] = string(rune('a' + i%26))
			}
			u := collect(m)
			switch shape {
			case "sorted":
				slices.SortFunc(u.keys, func(a, b keyAt[int64]) int { return int(a.k - b.k) })
			case "reversed":
				slices.SortFunc(u.keys, func(a, b keyAt[int64]) int { return int(b.k - a.k) })
			case "random":
				rand.Shuffle(len(u.keys), func(i, j int) { u.keys[i], u.keys[j] = u.keys[j], u.keys[i] })
			}
			got := u.sorted()
			if len(got) != n {
				t.Fatalf("%d %s: %d rows", n, shape, len(got))
			}
			for i, v := range got {
				if v != m[int64(i)] {
					t.Fatalf("%d %s: row %d = %q, want %q", n, shape, i, v, m[int64(i)])
				}
			}
		}
	}
}

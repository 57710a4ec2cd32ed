package memory

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// pacedSort orders keys as a sort does, of every length around its runs,
// and calls its pace at least once per run of keys it sorts.
func TestPacedSortSortsAndPaces(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, sortRun - 1, sortRun, sortRun + 1, 3 * sortRun, 5*sortRun + 7, 16 * sortRun} {
		keys := make([]int, n)
		for i := range keys {
			keys[i] = r.IntN(n/2 + 1) // duplicates too
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		paces := 0
		pacedSort(keys, cmp.Compare[int], func() { paces++ })
		if !slices.Equal(keys, want) {
			t.Fatalf("%d keys: not sorted", n)
		}
		if runs := (n + sortRun - 1) / sortRun; n > sortRun && paces < runs {
			t.Fatalf("%d keys: paced %d times, want at least %d (once per run sorted)", n, paces, runs)
		}
	}
}

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

// pacedSort orders inputs that a quicksort's pivots handle worst (sorted,
// reversed, all equal, organ pipe) and its heap sort orders what it is
// handed, paced too; the sort allocates nothing, so a snapshot write's key
// lists are its only garbage from ordering.
func TestPacedSortInPlace(t *testing.T) {
	n := 5*sortRun + 3
	inputs := map[string]func(i int) int{
		"sorted":     func(i int) int { return i },
		"reversed":   func(i int) int { return n - i },
		"equal":      func(int) int { return 7 },
		"organ pipe": func(i int) int { return min(i, n-i) },
	}
	for name, key := range inputs {
		keys := make([]int, n)
		for i := range keys {
			keys[i] = key(i)
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		pacedSort(keys, cmp.Compare[int], func() {})
		if !slices.Equal(keys, want) {
			t.Fatalf("%s keys: not sorted", name)
		}
		heaped := slices.Clone(want)
		slices.Reverse(heaped)
		paces := 0
		s := pacedSorter[int]{compare: cmp.Compare[int], pace: func() { paces++ }}
		s.heapSort(heaped)
		if !slices.Equal(heaped, want) {
			t.Fatalf("%s keys: not heap sorted", name)
		}
		if name == "reversed" && paces == 0 {
			t.Fatalf("%s keys: the heap sort never paced", name)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([]int, 16*sortRun)
	allocs := testing.AllocsPerRun(3, func() {
		for i := range keys {
			keys[i] = r.Int()
		}
		pacedSort(keys, cmp.Compare[int], func() {})
	})
	if allocs != 0 {
		t.Fatalf("pacedSort allocated %v times: want none", allocs)
	}
}

package memory

import (
	"errors"
	"slices"

	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// errPageOutOfOrder is a page of a table asked out of order where a page
// goes on from where the last ended (the deliveries, the attempts).
var errPageOutOfOrder = errors.New("projections/memory: the rows of this table of an image are read in order, a page after the last")

// feedTable is the deliveries table of a paged image, read in feed order
// (the file's) straight from the feed index, a page after the last: no
// list of the deliveries' keys is made (32 bytes a delivery, and a string
// for each id held as a UUID, the largest part of a snapshot write's
// garbage). A page goes on from the last delivery it read: the live
// deliveries after it not written since the image began, merged with the
// rows kept for those written since (their priors), each at its place at
// the checkpoint.
type feedTable struct {
	s      *Store
	priors cow[string, deliveryRow] // the image's copy-on-write side
	n      int                      // the deliveries at the checkpoint
	next   int                      // the rows read so far
	last   feedKey                  // the last delivery read, once next > 0
	kept   []feedKey                // the priors after last, in feed order
	keptAt int                      // kept[:keptAt] are read
	page   []projections.Delivery   // reused by every page
}

func (t *feedTable) begin() {
	t.s.deliveriesCOW = cow[string, deliveryRow]{}
	t.priors = t.s.deliveriesCOW
	t.n, t.next = len(t.s.feed), 0
}

func (t *feedTable) end() { t.s.deliveriesCOW = nil }

// list and order have nothing to do: the feed is in the file's order, and
// begin counted its rows.
func (t *feedTable) list(func()) {}

func (t *feedTable) order(func()) {}

func (t *feedTable) rows() int { return t.n }

func (t *feedTable) reserve(n int) {
	if cap(t.page) < n {
		t.page = make([]projections.Delivery, 0, n)
	}
	t.page = t.page[:0]
}

// read appends the next rows [from, to) to the page; the caller holds the
// read lock.
func (t *feedTable) read(from, to int) error {
	if from != t.next || to > t.n {
		return errPageOutOfOrder
	}
	s := t.s
	t.kept, t.keptAt = t.kept[:0], 0
	for id, p := range t.priors {
		if k := (feedKey{p.v.cursorAt(), id}); p.had && (t.next == 0 || compareFeed(k, t.last) > 0) {
			t.kept = append(t.kept, k)
		}
	}
	slices.SortFunc(t.kept, compareFeed)
	i := 0 // the feed's first place after last
	if t.next > 0 {
		j, found := s.searchFeed(s.feed, t.last)
		if i = j; found {
			i++
		}
	}
	for at := from; at < to; at++ {
		var live *deliveryRow
		var id string
		for ; i < len(s.feed) && live == nil; i++ {
			r := s.deliveries.at(s.feed[i])
			if id = r.deliveryID(); !t.keeps(id) {
				live = r
			}
		}
		if live != nil && t.keptAt < len(t.kept) && live.compareFeed(t.kept[t.keptAt]) > 0 {
			i-- // the kept row comes first: the live one is read after it
			live = nil
		}
		switch {
		case live != nil:
			t.page = append(t.page, live.view(id, &s.eventTypes))
			t.last = feedKey{live.cursorAt(), id}
		case t.keptAt < len(t.kept):
			k := t.kept[t.keptAt]
			t.keptAt++
			r := t.priors[k.id].v
			t.page = append(t.page, r.view(k.id, &s.eventTypes))
			t.last = k
		default:
			return errors.New("projections/memory: the deliveries' feed ended before the image's rows")
		}
		t.next = at + 1
	}
	return nil
}

// keeps reports whether delivery id was written since the image began.
func (t *feedTable) keeps(id string) bool {
	_, kept := t.priors[id]
	return kept
}

func (t *feedTable) lend(im *snapfile.Image) { im.Deliveries = t.page }

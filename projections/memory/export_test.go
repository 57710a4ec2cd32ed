package memory

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
)

// SetImageStep makes f run whenever a paged image of a read model
// released the read model's lock between two of its steps (listing keys or
// reading a page), so a test can write to the read model in the middle of
// a snapshot write. Set it before the store is used.
func SetImageStep(s *Store, f func()) { s.imageStep = f }

// SetPageRows sets how many rows one hold of the lock reads for a paged
// image, and returns how to put it back.
func SetPageRows(n int) (restore func()) {
	prev := pageRows
	pageRows = n
	return func() { pageRows = prev }
}

// WriteSlice is how long a write made by Run works before it rests.
const WriteSlice = writeSlice

// PacedWrite is a write as Run makes it, pause standing in for each rest.
func PacedWrite(ctx context.Context, s *Snapshotter, pause func(time.Duration)) error {
	return s.write(ctx, &pacer{last: time.Now(), pause: pause})
}

// view is the delivery id as the rows hold it (see deliveryRow.view), or
// the zero delivery.
func (s *Store) view(id string) projections.Delivery {
	r, ok := s.deliveries.get(id)
	if !ok {
		return projections.Delivery{}
	}
	return r.view(id, &s.eventTypes)
}

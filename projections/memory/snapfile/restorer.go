package snapfile

import (
	"errors"
	"sync"

	"github.com/healthtech/partner-open-platform/projections"
)

// Restorer takes one read model's rows as a reader decodes them (ReadEach),
// a part at a time, so that the decoded rows of a whole table are never
// held at once: the store keeps what it packs of each part and the part's
// rows and bytes are reused for the next one.
type Restorer interface {
	// Lane is the lane table t is restored in. The parts of one lane's
	// tables are given one at a time, in the file's order (each table's
	// rows in order, tables by index); the lanes run concurrently.
	Lane(t Table) int
	// Keeps reports whether Rows keeps the slice of table t's rows it is
	// given. The reader reuses the rows of a table not kept, and the
	// section bytes they view, once Rows returned: Rows must then copy
	// whatever it keeps of their texts.
	Keeps(t Table) bool
	// Rows restores part: the next rows of table t, in t's field of part
	// (every other field empty).
	Rows(t Table, part *Image) error
	// End ends the restore. With err nil every row was given, and the
	// read model takes the image's checkpoint; otherwise it drops every
	// row it was given and stays as a fresh one. It returns err, or why
	// the rows it was given do not make a read model.
	End(err error) error
}

// Begin begins the restore of one read model of a file: rows counts the
// rows of each of its tables by the table's index (as Header's Tables).
type Begin func(rm ReadModel, rows []int) (Restorer, error)

// RestoreWhole gives r every table of im, each as one part (its lanes
// concurrently), and ends r.
func RestoreWhole(r Restorer, im *Image) error {
	lanes := map[int][]Table{}
	for t, f := range imageFields {
		if f.rows(im) > 0 {
			lane := r.Lane(Table(t))
			lanes[lane] = append(lanes[lane], Table(t))
		}
	}
	errs := make(chan error, len(lanes))
	for _, tables := range lanes {
		go func() {
			for _, t := range tables {
				var part Image
				imageFields[t].move(&part, im)
				if err := r.Rows(t, &part); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var err error
	for range lanes {
		err = errors.Join(err, <-errs)
	}
	return r.End(err)
}

// collectInto begins restores that assemble whole images into out, by
// read model (Read).
func collectInto(out map[projections.ReadModel]Image) Begin {
	var mu sync.Mutex
	return func(rm ReadModel, _ []int) (Restorer, error) {
		return &collector{mu: &mu, im: Image{ReadModel: rm.ReadModel, Checkpoint: rm.Checkpoint, BodiesInLog: rm.BodiesInLog}, out: out}, nil
	}
}

// collector is a Restorer that assembles a whole image.
type collector struct {
	mu  *sync.Mutex
	im  Image
	out map[projections.ReadModel]Image
}

func (c *collector) Lane(Table) int   { return 0 }
func (c *collector) Keeps(Table) bool { return true }
func (c *collector) Rows(t Table, part *Image) error {
	imageFields[t].appendPart(&c.im, part)
	return nil
}

func (c *collector) End(err error) error {
	if err == nil {
		c.mu.Lock()
		c.out[c.im.ReadModel] = c.im
		c.mu.Unlock()
	}
	return err
}

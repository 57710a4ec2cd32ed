package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// readsInFlight is how many round trips of one-row reads a node keeps in
// flight at once before queueing further reads behind them: the pool's
// size. Below it a read is sent at once on its own, as when nothing waits; at
// it, a read would wait for a connection anyway, and the reads that
// arrive meanwhile go out together as one pipeline when one round trip
// returns. A smaller bound (one per core) batched more but cut Postgres'
// parallelism: on the shared 2-core machine the rate fell to 0.23–0.31×
// pgbench -S against 0.39–0.44× at the pool's size (scripts/bench.sh).
func readsInFlight(pool *pgxpool.Pool) int { return max(2, int(pool.Config().MaxConns)) }

// readBatchMax bounds the reads one pipeline carries, so a burst is sent
// as several pipelines of bounded size rather than one unbounded one.
const readBatchMax = 64

// pipeReader sends one-row reads (rowRead) so that concurrent reads share
// round trips: a read that finds fewer than max round trips in flight is
// sent at once on its own connection with its own context, exactly as a
// plain QueryRow; one that finds max in flight is queued, and the next
// round trip to return takes the queue and sends it on one connection as
// one pipeline, with a Sync after each read. Each read is thus its own
// implicit transaction: it starts after the read was queued (so it sees
// every write acknowledged before its caller began, as a lone read does),
// an error in one (a failed statement) ends only that read, and a read
// that writes (the replay guard's binding) commits on its own. No read
// ever waits on a timer: a queued read waits only for a round trip already
// in flight, and a queue forms only when max round trips are. The zero
// pipeReader sends at most readsInFlight(pool) round trips at once.
type pipeReader struct {
	// max is the round trips allowed in flight: readsInFlight(pool)
	// unless set (tests set 1).
	max int

	mu       sync.Mutex
	inflight int
	queue    []*rowRead
	// batches counts the pipelines sent (tests observe the grouping).
	batches int
}

// rowRead is one read: its statement, its arguments, what its one row is
// scanned into, and once done is closed, its outcome. gone is set (under
// the batch's lock) when its caller stopped waiting.
type rowRead struct {
	sql  string
	args []any
	dest func(pgx.Row) error

	done chan struct{}
	err  error
	// batch is the pipeline carrying this read, once one took it.
	batch *readBatch
	gone  bool
}

// readBatch is one pipeline's reads and the context its round trip runs
// under, cancelled once every caller in it has stopped waiting, so that a
// caller's cancellation ends only its own wait while the others are read.
type readBatch struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	live   int
}

// limit is the round trips allowed in flight; p.mu must be held.
func (p *pipeReader) limit(pool *pgxpool.Pool) int {
	if p.max <= 0 {
		p.max = readsInFlight(pool)
	}
	return p.max
}

// queryRow runs sql with args, scanning its one row with dest (pgx.ErrNoRows
// when it returns none), alone or in a pipeline with other queued reads.
func (p *pipeReader) queryRow(ctx context.Context, pool *pgxpool.Pool, sql string, args []any, dest func(pgx.Row) error) error {
	p.mu.Lock()
	if p.inflight < p.limit(pool) {
		// Below the limit the queue is empty (a round trip that returns
		// with reads queued takes them instead of giving its slot back).
		p.inflight++
		p.mu.Unlock()
		err := readAlone(ctx, pool, &rowRead{sql: sql, args: args, dest: dest})
		p.release(pool)
		return err
	}
	r := &rowRead{sql: sql, args: args, dest: dest, done: make(chan struct{})}
	p.queue = append(p.queue, r)
	p.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
	}
	p.abandon(r)
	return ctx.Err()
}

// abandon marks r as no longer awaited, so that nothing is scanned into
// its caller's memory any more: still queued, it is dropped from the
// queue; in a batch, the batch's round trip is cancelled when r was the
// last caller waiting on it (the others' reads go on).
func (p *pipeReader) abandon(r *rowRead) {
	p.mu.Lock()
	if i := slices.Index(p.queue, r); i >= 0 {
		p.queue = slices.Delete(p.queue, i, i+1)
		p.mu.Unlock()
		return
	}
	b := r.batch
	p.mu.Unlock()
	b.mu.Lock()
	if !r.gone {
		r.gone = true
		b.live--
		if b.live == 0 {
			b.cancel()
		}
	}
	b.mu.Unlock()
}

// release ends a round trip: with reads queued, it sends them (in a
// goroutine of their own, so the caller that returned is not held) and
// keeps the slot; otherwise it gives the slot back.
func (p *pipeReader) release(pool *pgxpool.Pool) {
	if batch, b := p.next(); batch != nil {
		go p.sendAll(pool, batch, b)
	}
}

// next takes up to readBatchMax queued reads as a batch, or gives the slot
// back when none are queued.
func (p *pipeReader) next() ([]*rowRead, *readBatch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		p.inflight--
		return nil, nil
	}
	n := min(len(p.queue), readBatchMax)
	batch := slices.Clone(p.queue[:n])
	p.queue = slices.Delete(p.queue, 0, n)
	b := &readBatch{live: n}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	for _, r := range batch {
		r.batch = b
	}
	p.batches++
	return batch, b
}

// sendAll sends batches until the queue is empty, then gives the slot back.
func (p *pipeReader) sendAll(pool *pgxpool.Pool, batch []*rowRead, b *readBatch) {
	for batch != nil {
		err := sendPipeline(b.ctx, pool, batch, b)
		b.cancel()
		for _, r := range batch {
			if err != nil && r.err == nil {
				r.err = err
			}
			close(r.done)
		}
		batch, b = p.next()
	}
}

// sendPipeline sends batch's reads on one connection as one pipeline, one
// Sync after each, and fills in each read's outcome. It returns an error
// only when the connection or the round trip failed, which every read
// without an outcome of its own then shares.
func sendPipeline(ctx context.Context, pool *pgxpool.Pool, batch []*rowRead, b *readBatch) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("projections/postgres: pipelined read: %w", err)
	}
	defer conn.Release()
	c := conn.Conn()
	// Each statement is prepared once per connection (Prepare with its
	// text as its name returns the description it already holds).
	sds := make([]*pgconn.StatementDescription, len(batch))
	for i, r := range batch {
		if i > 0 && r.sql == batch[i-1].sql {
			sds[i] = sds[i-1]
			continue
		}
		if sds[i], err = c.Prepare(ctx, r.sql, r.sql); err != nil {
			return fmt.Errorf("projections/postgres: pipelined read: prepare: %w", err)
		}
	}
	tm := c.TypeMap()
	pl := c.PgConn().StartPipeline(ctx)
	sent := make([]bool, len(batch))
	var enc paramEncoder
	for i, r := range batch {
		values, formats, results, err := enc.encode(tm, sds[i], r.args)
		if err != nil {
			r.err = fmt.Errorf("projections/postgres: pipelined read: %w", err)
			continue
		}
		// The pipeline keeps the values and formats until the result is
		// read; the encoder reuses its slices.
		pl.SendQueryStatement(sds[i], slices.Clone(values), slices.Clone(formats), slices.Clone(results))
		pl.SendPipelineSync()
		sent[i] = true
	}
	if err := pl.Flush(); err != nil {
		_ = pl.Close()
		return fmt.Errorf("projections/postgres: pipelined read: %w", err)
	}
	for i, r := range batch {
		if !sent[i] {
			continue
		}
		if err := readOne(pl, tm, r, b); err != nil {
			_ = pl.Close()
			return err
		}
	}
	if err := pl.Close(); err != nil {
		return fmt.Errorf("projections/postgres: pipelined read: %w", err)
	}
	return nil
}

// readOne reads one read's result and the Sync after it. A statement's
// own error (a *pgconn.PgError) is that read's outcome; any other error
// breaks the pipeline and is returned.
func readOne(pl *pgconn.Pipeline, tm *pgtype.Map, r *rowRead, b *readBatch) error {
	res, err := pl.GetResults()
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		r.err = err
	case err != nil:
		return fmt.Errorf("projections/postgres: pipelined read: %w", err)
	default:
		rr, ok := res.(*pgconn.ResultReader)
		if !ok {
			return fmt.Errorf("projections/postgres: pipelined read: got %T, want a result", res)
		}
		// The caller's memory is written only while it still waits.
		b.mu.Lock()
		if !r.gone {
			r.err = r.dest(&pipeRow{rr: rr, tm: tm})
		}
		b.mu.Unlock()
		if _, err := rr.Close(); err != nil && r.err == nil {
			r.err = err
		}
	}
	res, err = pl.GetResults()
	if err != nil {
		return fmt.Errorf("projections/postgres: pipelined read: sync: %w", err)
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("projections/postgres: pipelined read: got %T, want the Sync", res)
	}
	return nil
}

// pipeRow is a pipelined result as a pgx.Row: its first row scanned into
// dest, pgx.ErrNoRows when there is none, as QueryRow's Scan.
type pipeRow struct {
	rr *pgconn.ResultReader
	tm *pgtype.Map
}

// Scan implements pgx.Row.
func (r *pipeRow) Scan(dest ...any) error {
	if !r.rr.NextRow() {
		if _, err := r.rr.Close(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	return pgx.ScanRow(r.tm, r.rr.FieldDescriptions(), r.rr.Values(), dest...)
}

// readAlone sends one read on a connection of its own: its statement
// prepared once per connection under its text (as sendPipeline does), its
// arguments encoded by paramEncoder, its row handed to r.dest as a
// pipeRow, so that a dest that knows the columns (snapshotRow) decodes the
// raw values without pgx's per-query scan plans. It is what pool.QueryRow
// did, minus pgx's argument reflection and scan planning, which were a
// tenth of the node's CPU per snapshot read.
func readAlone(ctx context.Context, pool *pgxpool.Pool, r *rowRead) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	c := conn.Conn()
	sd, err := c.Prepare(ctx, r.sql, r.sql)
	if err != nil {
		return err
	}
	enc := encoders.Get().(*paramEncoder)
	defer encoders.Put(enc)
	values, formats, results, err := enc.encode(c.TypeMap(), sd, r.args)
	if err != nil {
		return err
	}
	rr := c.PgConn().ExecStatement(ctx, sd, values, formats, results)
	err = r.dest(&pipeRow{rr: rr, tm: c.TypeMap()})
	if _, cerr := rr.Close(); cerr != nil && (err == nil || errors.Is(err, pgx.ErrNoRows)) {
		err = cerr
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "0A000" {
		// "cached plan must not change result type": the schema changed
		// under the prepared statement (another node migrated); prepare
		// it afresh next time, as pgx's statement cache does.
		_ = c.Deallocate(ctx, sd.Name)
	}
	return err
}

// Type OIDs paramEncoder and snapshotRow handle themselves.
const (
	oidBytea       = 17
	oidInt8        = 20
	oidInt4        = 23
	oidText        = 25
	oidFloat8      = 701
	oidVarchar     = 1043
	oidTimestamptz = 1184
)

// pgEpoch is Postgres' timestamp epoch, 2000-01-01 UTC.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// paramEncoder encodes a read's arguments in binary for its prepared
// statement: strings into text, int64 into bigint and time.Time into
// timestamptz directly, anything else (or any other parameter type)
// through pgx's ExtendedQueryBuilder. Results come back in binary for the
// column types snapshotRow decodes, and as pgx chooses otherwise.
type paramEncoder struct {
	values  [][]byte
	formats []int16
	results []int16
	buf     []byte
	spans   []span
	eqb     pgx.ExtendedQueryBuilder
}

// span is one encoded argument's place in paramEncoder.buf (n -1: NULL).
type span struct{ at, n int }

// encoders recycles readAlone's encoders, whose slices a read would
// otherwise allocate afresh; a result read to its end no longer uses them.
var encoders = sync.Pool{New: func() any { return new(paramEncoder) }}

func (e *paramEncoder) encode(tm *pgtype.Map, sd *pgconn.StatementDescription, args []any) (values [][]byte, formats, results []int16, err error) {
	if len(args) != len(sd.ParamOIDs) {
		return nil, nil, nil, fmt.Errorf("statement takes %d arguments, got %d", len(sd.ParamOIDs), len(args))
	}
	e.values, e.formats, e.buf = e.values[:0], e.formats[:0], e.buf[:0]
	// Offsets into buf first: buf may move while it grows.
	spans := e.spans[:0]
	defer func() { e.spans = spans[:0] }()
	for i, a := range args {
		at := len(e.buf)
		switch v := a.(type) {
		case string:
			if sd.ParamOIDs[i] != oidText && sd.ParamOIDs[i] != oidVarchar {
				return e.slow(tm, sd, args)
			}
			e.buf = append(e.buf, v...)
		case int64:
			if sd.ParamOIDs[i] != oidInt8 {
				return e.slow(tm, sd, args)
			}
			e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v))
		case time.Time:
			if sd.ParamOIDs[i] != oidTimestamptz {
				return e.slow(tm, sd, args)
			}
			e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v.Sub(pgEpoch).Microseconds()))
		case float64:
			if sd.ParamOIDs[i] != oidFloat8 {
				return e.slow(tm, sd, args)
			}
			e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(v))
		case nil:
			spans = append(spans, span{at, -1}) // NULL
			e.formats = append(e.formats, pgx.BinaryFormatCode)
			continue
		default:
			return e.slow(tm, sd, args)
		}
		spans = append(spans, span{at, len(e.buf) - at})
		e.formats = append(e.formats, pgx.BinaryFormatCode)
	}
	for _, sp := range spans {
		if sp.n < 0 {
			e.values = append(e.values, nil)
			continue
		}
		e.values = append(e.values, e.buf[sp.at:sp.at+sp.n:sp.at+sp.n])
	}
	e.results = e.results[:0]
	for _, f := range sd.Fields {
		switch f.DataTypeOID {
		case oidBytea, oidInt8, oidInt4, oidText, oidVarchar, oidTimestamptz, oidFloat8:
			e.results = append(e.results, pgx.BinaryFormatCode)
		default:
			e.results = append(e.results, tm.FormatCodeForOID(f.DataTypeOID))
		}
	}
	return e.values, e.formats, e.results, nil
}

// slow encodes args through pgx, for argument or parameter types encode
// does not handle itself.
func (e *paramEncoder) slow(tm *pgtype.Map, sd *pgconn.StatementDescription, args []any) ([][]byte, []int16, []int16, error) {
	if err := e.eqb.Build(tm, sd, args); err != nil {
		return nil, nil, nil, err
	}
	return e.eqb.ParamValues, e.eqb.ParamFormats, e.eqb.ResultFormats, nil
}

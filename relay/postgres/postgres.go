// Package postgres keeps the relay's checkpoint in Postgres, where every
// node can read it and whichever node holds the relay lease resumes from
// it. Each save is fenced on that lease inside its own transaction, so a
// paused old owner cannot write after losing it, and the position never
// moves backwards.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/lease"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgmigrate"
	"github.com/healthtech/partner-open-platform/relay"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*/*.sql
var migrationFiles embed.FS

// migrationLock is the read-model store's schema lock (projections/postgres):
// this part is recorded in the same schema_versions table, so both must
// create and write it under one lock.
const migrationLock int64 = 0x726561646d6f646c

// ErrUnfenced is returned by Save when ctx carries no lease: a checkpoint
// written by whoever happens to run would let two relays move it.
var ErrUnfenced = errors.New("relay checkpoint: save without the relay lease (lease.WithFence)")

// fenceIdle bounds how long a save's transaction may sit idle while it
// holds the lease row, so a paused writer cannot stall a takeover.
const fenceIdle = 5 * time.Second

// Checkpoints is relay.Checkpoints in the table relay_checkpoints.
type Checkpoints struct {
	pool  *pgxpool.Pool
	name  string
	owned bool // Close closes pool (Open made it)
}

var _ relay.Checkpoints = (*Checkpoints)(nil)

// Open connects to url (the database that also keeps the leases) and
// brings the checkpoint and lease tables up to date; name tells relays
// with different outputs apart.
func Open(ctx context.Context, url, name string) (*Checkpoints, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("relay checkpoint: %w", err)
	}
	c, err := New(ctx, pool, name)
	if err != nil {
		pool.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}

// New is Open over a pool the caller already has (a node's read-model
// pool), so a node keeps one pool per database.
func New(ctx context.Context, pool *pgxpool.Pool, name string) (*Checkpoints, error) {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err == nil {
		s := pgmigrate.Schema{Files: files, Parts: []string{"relay"}, Table: "schema_versions", Lock: migrationLock}
		err = s.Apply(ctx, pool)
	}
	if err == nil {
		err = leasepg.Migrate(ctx, pool)
	}
	if err != nil {
		return nil, fmt.Errorf("relay checkpoint: %w", err)
	}
	return &Checkpoints{pool: pool, name: name}, nil
}

// Close releases the connections of a pool Open made.
func (c *Checkpoints) Close() error {
	if c.owned {
		c.pool.Close()
	}
	return nil
}

// Load implements relay.Checkpoints; the zero position when none was saved.
func (c *Checkpoints) Load(ctx context.Context) (events.Position, error) {
	var commit, prepare int64
	err := c.pool.QueryRow(ctx, `SELECT commit_pos, prepare_pos FROM relay_checkpoints WHERE name = $1`, c.name).Scan(&commit, &prepare)
	if errors.Is(err, pgx.ErrNoRows) {
		return events.Position{}, nil
	}
	if err != nil {
		return events.Position{}, fmt.Errorf("relay checkpoint: load: %w", err)
	}
	return events.Position{Commit: uint64(commit), Prepare: uint64(prepare)}, nil
}

// Save implements relay.Checkpoints. ctx must carry the relay lease
// (lease.WithFence, as lease.Held's context does): the write commits only
// while that lease is current, else the error wraps lease.ErrLost. A
// position at or before the saved one changes nothing.
func (c *Checkpoints) Save(ctx context.Context, pos events.Position) error {
	l, ok := lease.FenceFrom(ctx)
	if !ok {
		return ErrUnfenced
	}
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if err := leasepg.Fence(ctx, tx, l, fenceIdle); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
INSERT INTO relay_checkpoints AS c (name, commit_pos, prepare_pos, token) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE
SET commit_pos = excluded.commit_pos, prepare_pos = excluded.prepare_pos, token = excluded.token, updated_at = now()
WHERE (c.commit_pos, c.prepare_pos) < (excluded.commit_pos, excluded.prepare_pos)`,
			c.name, int64(pos.Commit), int64(pos.Prepare), l.Token)
		return err
	})
	if err != nil {
		return fmt.Errorf("relay checkpoint: save %s: %w", pos, err)
	}
	return nil
}

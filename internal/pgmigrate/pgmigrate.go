// Package pgmigrate applies embedded SQL migrations to Postgres, once each,
// however many processes start together: the event store and the read-model
// store both keep their schemas this way, each with its own lock and table.
package pgmigrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Schema says where a store's migrations are and how their application is recorded.
type Schema struct {
	// Files holds one folder per part (Files/<part>/NNNN_description.sql);
	// each part is versioned on its own, from 1 without gaps.
	Files fs.FS
	// Parts lists the folders in the order they are applied.
	Parts []string
	// Table records applied migrations as (part, version).
	Table string
	// Lock is the pg_advisory_xact_lock key that serialises schema changes.
	Lock int64
	// Prepare, if set, runs once under the lock after Table exists (to adopt
	// what an earlier layout recorded).
	Prepare func(ctx context.Context, tx pgx.Tx) error
}

// Migration is one file of one part.
type Migration struct {
	Part    string
	Version int
	Name    string
	SQL     string
}

// Migrations returns a part's migrations in version order; a file is named
// NNNN_description.sql and versions run 1, 2, 3... without gaps.
func (s Schema) Migrations(part string) ([]Migration, error) {
	entries, err := fs.ReadDir(s.Files, part)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		prefix, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 || path.Ext(name) != ".sql" {
			return nil, fmt.Errorf("migration %s/%q is not named NNNN_description.sql", part, name)
		}
		body, err := fs.ReadFile(s.Files, part+"/"+name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Part: part, Version: v, Name: part + "/" + name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.Name, i+1)
		}
	}
	return ms, nil
}

// Apply applies the migrations the database lacks, part by part, each in
// its own transaction under the advisory lock, so processes starting
// together apply each exactly once and a failed migration leaves the ones
// before it.
func (s Schema) Apply(ctx context.Context, pool *pgxpool.Pool) error {
	err := s.locked(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.Table+` (
    part       text        NOT NULL,
    version    int         NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (part, version)
)`); err != nil {
			return err
		}
		if s.Prepare != nil {
			return s.Prepare(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", s.Table, err)
	}
	for _, part := range s.Parts {
		ms, err := s.Migrations(part)
		if err != nil {
			return err
		}
		for _, m := range ms {
			err := s.locked(ctx, pool, func(tx pgx.Tx) error {
				var done bool
				if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.Table+` WHERE part = $1 AND version = $2)`,
					m.Part, m.Version).Scan(&done); err != nil || done {
					return err
				}
				// No arguments: pgx sends it with the simple protocol, which
				// allows the several statements of a migration file.
				if _, err := tx.Exec(ctx, m.SQL); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO `+s.Table+` (part, version) VALUES ($1, $2)`, m.Part, m.Version)
				return err
			})
			if err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
	}
	return nil
}

func (s Schema) locked(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.Lock); err != nil {
			return err
		}
		return fn(tx)
	})
}

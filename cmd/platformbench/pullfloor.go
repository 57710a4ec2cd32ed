package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
)

// pullFloorSetup creates and fills the pull floor's tables in the pgbench
// database; pullFloorScript is one pull's writes and reads in one
// transaction (see the files).
var (
	//go:embed pullfloor_setup.sql
	pullFloorSetup string
	//go:embed pullfloor.sql
	pullFloorScript string
)

// pullFloor is where the report pull's second baseline runs: pgbench and
// a database on the platform's Postgres server.
type pullFloor struct {
	pgbench, url string
}

// PullFloor measures the report pull floor: pullFloorScript under pgbench
// with the pull's client count and window on a database (the pgbench -S
// one), its tables set up first. A pull cannot cost less than this
// transaction: it uses a nonce, takes a token, reads the report and the
// head, and appends its audit fact before it answers, where pgbench -S
// only reads one row.
func PullFloor(ctx context.Context, pgbench, url string, p Phase) (Measured, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return Measured{}, fmt.Errorf("pull floor: %w", err)
	}
	_, err = conn.PgConn().Exec(ctx, pullFloorSetup).ReadAll()
	conn.Close(ctx)
	if err != nil {
		return Measured{}, fmt.Errorf("pull floor set-up: %w", err)
	}
	dir, err := os.MkdirTemp("", "pull-floor-")
	if err != nil {
		return Measured{}, fmt.Errorf("pull floor: %w", err)
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "pull.sql")
	if err := os.WriteFile(script, []byte(pullFloorScript), 0o600); err != nil {
		return Measured{}, fmt.Errorf("pull floor: %w", err)
	}
	return runPgbench(ctx, pgbench, url, p, "pull floor", "-f", script)
}

// reportPullRows measures the report pull and returns its row against the
// read baseline and, with a floor, the floor's baseline row and the pull's
// row against it: the same measurement, two ratios.
func (b *Bench) reportPullRows(ctx context.Context, store string, base Measured, baseName string) ([]Row, error) {
	m, err := b.ReportPull(ctx)
	if err != nil {
		return nil, fmt.Errorf("report-pull: %w", err)
	}
	if b.capacity == nil {
		b.capacity = map[string]float64{}
	}
	b.capacity["report-pull"] = m.Rate()
	c := b.Opt.Clients
	rows := []Row{rowOf("report-pull", store, c, m, baseName, &base)}
	if b.floor == nil {
		return rows, nil
	}
	floor, err := PullFloor(ctx, b.floor.pgbench, b.floor.url, b.phase(c))
	if err != nil {
		return nil, err
	}
	return append(rows, rowOf("baseline: pull floor (pgbench -f)", store, c, floor, "", nil),
		rowOf("report-pull", store, c, m, "pull floor", &floor)), nil
}

package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// CheckpointSampler reads the checkpoints table every 200 ms and records
// every projection whose position moved backwards.
type CheckpointSampler struct {
	db          string
	last        map[string][2]uint64
	Samples     int
	LastErr     string
	Regressions []string
}

// NewCheckpointSampler samples the checkpoints table of the database db.
func NewCheckpointSampler(db string) *CheckpointSampler {
	return &CheckpointSampler{db: db, last: map[string][2]uint64{}}
}

func (s *CheckpointSampler) Run(ctx context.Context) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		if conn == nil {
			var err error
			if conn, err = pgx.Connect(ctx, s.db); err != nil {
				s.LastErr = err.Error()
				continue
			}
		}
		rows, err := conn.Query(ctx, `SELECT projection, commit_pos, prepare_pos FROM checkpoints`)
		if err != nil {
			s.LastErr = err.Error()
			conn.Close(context.Background())
			conn = nil
			continue
		}
		at := time.Now()
		for rows.Next() {
			var name string
			var commit, prepare int64
			if err := rows.Scan(&name, &commit, &prepare); err != nil {
				s.LastErr = err.Error()
				break
			}
			// Positions are uint64 stored bit for bit in bigint.
			pos := [2]uint64{uint64(commit), uint64(prepare)}
			if prev, ok := s.last[name]; ok && (pos[0] < prev[0] || (pos[0] == prev[0] && pos[1] < prev[1])) {
				s.Regressions = append(s.Regressions, fmt.Sprintf("%s: %d/%d then %d/%d at %s", name, prev[0], prev[1], pos[0], pos[1], at.Format("15:04:05.000")))
			}
			s.last[name] = pos
		}
		rows.Close()
		if rows.Err() == nil {
			s.Samples++
		} else {
			s.LastErr = rows.Err().Error()
		}
	}
}

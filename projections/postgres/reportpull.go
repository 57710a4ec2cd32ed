package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/projections"
)

// pullColumns are reportColumns of the LEFT JOINed row r, with the
// columns the table declares NOT NULL given a zero value when no report
// matched (found, the statement's own column, tells).
var pullColumns = strings.NewReplacer(
	"report_id, app_id, open_user_id,", "coalesce(r.report_id, 0), coalesce(r.app_id, 0), coalesce(r.open_user_id, 0),",
	"open_member_id,", "r.open_member_id,",
	"request_report_id,", "r.request_report_id,",
	"measurement_no,", "r.measurement_no,",
	"device_sn,", "r.device_sn,",
	"report_type,", "r.report_type,",
	"file_path,", "r.file_path,",
	"interpretation_result,", "r.interpretation_result,",
	"interpretation_detail,", "r.interpretation_detail,",
	"interpretation_method,", "r.interpretation_method,",
	"is_viewed,", "coalesce(r.is_viewed, false),",
	"uploaded_at,", "coalesce(r.uploaded_at, 'epoch'),",
	"examined_at,", "r.examined_at,",
	"interpreted_at,", "r.interpreted_at,",
	"points_code,", "r.points_code,",
	"data_source,", "r.data_source,",
	"operator_name,", "r.operator_name,",
	"operator_platform_user_id,", "r.operator_platform_user_id,",
	"raw_data,", "r.raw_data,",
	"day,", "coalesce(r.day, ''),",
	"updated_at", "coalesce(r.updated_at, 'epoch')",
).Replace(reportColumns)

// pullQuery is PullReport's statement with head standing for the log's
// head (a bigint expression). Its common table expressions run in order of
// need: n uses the nonce exactly as useNonceQuery does (the conflict lock
// makes concurrent uses of one nonce see each other); with take, t takes
// tokens as ratelimit/postgres does, only when n returned its row, so a
// replay spends nothing, and the report is joined only when t granted a
// token, so a refused pull carries no health data over the wire. Without
// take (a pull admitted from the node's lease) there is no t: the bucket's
// row, which every pull of the app would otherwise update in turn, is not
// touched, and the report is joined once n returned its row.
//
// $1 nonce scope, $2 nonce, $3 its expiry, $4 now (this process's clock,
// as Use), $5 the reports read model's name, $6 report id, $7 app id; with
// take, $8 to $14 are the bucket's (ratelimitpg.TakeWhenFrom).
func pullQuery(head string, take bool) string {
	const fresh = `EXISTS (SELECT 1 FROM n)`
	takeCTE, tokens, admitted := "", "NULL::float8, NULL::int", fresh
	if take {
		takeCTE = ",\nt AS (" + ratelimitpg.TakeWhenFrom(fresh, 8) + ")"
		tokens, admitted = "(SELECT tokens FROM t), (SELECT granted FROM t)", "(SELECT granted FROM t) >= 1"
	}
	return `WITH n AS (
    INSERT INTO nonces (scope, nonce, expires_at) VALUES ($1, $2, $3)
    ON CONFLICT (scope, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
        WHERE nonces.expires_at <= $4
    RETURNING true AS fresh)` + takeCTE + `
SELECT ` + fresh + `, ` + tokens + `,
    c.commit_pos, c.prepare_pos, ` + head + `, r.report_id IS NOT NULL,
    ` + pullColumns + `
FROM (SELECT 1) AS one
LEFT JOIN checkpoints c ON c.projection = $5
LEFT JOIN reports r ON r.report_id = $6 AND r.app_id = $7 AND ` + admitted
}

// pullSQL is PullReport's statements built for one head statement: with a
// take from the bucket and without one.
type pullSQL struct {
	head           *headQuery
	pullHead       string
	withTake, bare string
}

// SeePullHead narrows the head PullReport reads, under SeeHead, to sql
// (one bigint, converted by SeeHead's position): the head of the events
// the reports read model applies (events/postgres.HeadOfTypesQuery). A
// pull must wait until its read model has passed every event it applies,
// not the other pulls' audit facts appended meanwhile. Call it before
// serving, after SeeHead; without SeeHead it changes nothing.
func (s *Store) SeePullHead(sql string) { s.pullHead = sql }

// PullReport answers a report pull's ReportPullQuery in one statement (see
// pullQuery). Like Use, one call in pruneEvery first deletes expired
// nonces, in the same round trip.
func (s *Store) PullReport(ctx context.Context, q projections.ReportPullQuery) (projections.ReportPull, error) {
	c := s.pullSQL.Load()
	if c == nil || c.head != s.head || c.pullHead != s.pullHead {
		head := "NULL::bigint"
		switch {
		case s.head != nil && s.pullHead != "":
			head = "(" + s.pullHead + ")"
		case s.head != nil:
			head = "(" + s.head.sql + ")"
		}
		c = &pullSQL{head: s.head, pullHead: s.pullHead, withTake: pullQuery(head, true), bare: pullQuery(head, false)}
		s.pullSQL.Store(c)
	}
	now := time.Now()
	text := c.bare
	args := append(make([]any, 0, 14), q.NonceScope, q.Nonce, q.NonceExpires, now, string(projections.ReadModelReports), q.ReportID, q.AppID)
	if tk := q.Take; tk != nil {
		var bucketNow *time.Time
		if tk.Bucket.Now != nil {
			t := tk.Bucket.Now()
			bucketNow = &t
		}
		text = c.withTake
		args = append(args, tk.Bucket.Name, tk.Key, tk.Bucket.Limit, ratelimit.Rate(tk.Bucket.Limit, tk.Bucket.Period),
			max(tk.Want, 0), max(tk.Back, 0), bucketNow)
	}
	var (
		out             projections.ReportPull
		tokens          *float64
		granted         *int32
		commit, prepare *int64
		h               *int64
	)
	dests := append([]any{&out.Fresh, &tokens, &granted, &commit, &prepare, &h, &out.Found}, reportDests(&out.Report)...)
	scan := func(row pgx.Row) error { return row.Scan(dests...) }
	var err error
	if rand.IntN(pruneEvery) == 0 {
		b := &pgx.Batch{}
		b.Queue(pruneNoncesQuery, now, pruneBatch)
		b.Queue(text, args...).QueryRow(scan)
		err = s.pool.SendBatch(ctx, b).Close()
	} else {
		err = scan(s.pool.QueryRow(ctx, text, args...))
	}
	if err != nil {
		return projections.ReportPull{}, fmt.Errorf("projections/postgres: pull report %d of app %d: %w", q.ReportID, q.AppID, err)
	}
	if tokens != nil && granted != nil {
		out.Grant = ratelimit.Grant{Tokens: *tokens, Granted: int(*granted)}
	}
	if commit != nil && prepare != nil {
		out.Checkpoint = events.Position{Commit: uint64(*commit), Prepare: uint64(*prepare)}
	}
	if s.head != nil && h != nil {
		out.Head, out.HeadKnown = s.head.position(*h), true
	}
	if out.Found {
		fixReport(&out.Report)
	} else {
		out.Report = projections.Report{}
	}
	return out, nil
}

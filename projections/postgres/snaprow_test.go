package postgres

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The snapshot statement's row decoded from its binary values (readAlone,
// snapshotRow.raw) is what pgx's own QueryRow and Scan make of the same
// statement, in all eight forms, with and without a user, a checkpoint, a
// head, a binding and a bucket take (NULLs included); so are the arguments
// paramEncoder writes in binary (a binding's expiry comes back to the
// microsecond, a take's clock may be NULL).
func TestSnapshotRowRawEqualsPgxScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := MigratedDB(t)
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pool := s.Pool()
	for _, sql := range []string{
		`INSERT INTO user_snapshots (open_user_id, app_id, channel_user_id, doc) VALUES (10, 1, 'ch-10', '{"u":{"n":"A"},"g":[],"m":[]}'::bytea)`,
		`INSERT INTO user_snapshots (open_user_id, app_id, channel_user_id, doc) VALUES (11, 1, '', ''::bytea)`,
		`INSERT INTO checkpoints (projection, commit_pos, prepare_pos, updated_at) VALUES ('users', 7, 6, now())
		 ON CONFLICT (projection) DO UPDATE SET commit_pos = 7, prepare_pos = 6`,
		`CREATE TABLE fake_log (position bigint)`,
		`INSERT INTO fake_log VALUES (3), (9)`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	expires := time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	type form struct {
		head *headQuery
		bind bool
		take bool
		args []any
	}
	head := &headQuery{sql: `SELECT coalesce(max(position), 0) FROM fake_log`}
	var forms []form
	for _, h := range []*headQuery{nil, head} {
		for _, bind := range []bool{false, true} {
			for _, take := range []bool{false, true} {
				for _, user := range []any{int64(10), int64(11), int64(404), "ch-10", "nobody"} {
					var args []any
					if bind {
						key := "k-" + time.Now().Format(time.RFC3339Nano)
						args = append(args, "m", key, "GET", int64(42), expires, now)
					}
					readModel := "users"
					if len(forms)%2 == 1 {
						readModel = "no such family" // no checkpoint: NULLs
					}
					args = append(args, readModel, int64(1), user)
					if take {
						var clock any // the database's
						if len(forms)%3 == 0 {
							clock = now
						}
						args = append(args, "scheme_m", "app-"+strconv.Itoa(len(forms)), 100.0, 10.0, 7.0, 2.0, clock)
					}
					forms = append(forms, form{head: h, bind: bind, take: take, args: args})
				}
			}
		}
	}
	for i, f := range forms {
		user := len(f.args) - 1
		if f.take {
			user -= 7
		}
		_, byChannel := f.args[user].(string)
		sql := buildSnapshotSQL(f.head).text[btoi(f.bind)][btoi(byChannel)][btoi(f.take)]
		raw := snapshotRow{take: f.take}
		if err := readAlone(ctx, pool, &rowRead{sql: sql, args: f.args, dest: raw.scan}); err != nil {
			t.Fatalf("form %d (%v): readAlone: %v", i, f.args, err)
		}
		if f.take {
			// A new key's bucket starts full (100) and grants the 7 asked for.
			if raw.granted == nil || *raw.granted != 7 || raw.tokens == nil || *raw.tokens != 93 {
				t.Fatalf("form %d: take granted %v leaving %v, want 7 leaving 93", i, raw.granted, raw.tokens)
			}
			f.args[user+2] = f.args[user+2].(string) + "-pgx" // pgx's read below takes from a fresh key
		}
		if !rawDecoded(ctx, t, pool, sql, f.take, f.args) {
			t.Fatalf("form %d: the row was not decoded from its binary values", i)
		}
		if f.bind {
			// The binding is in now; pgx reads it back as it holds.
			if raw.until == nil || !raw.until.Equal(expires) || raw.bound == nil || *raw.bound != "GET" {
				t.Fatalf("form %d: binding %v until %v, want GET until %v", i, raw.bound, raw.until, expires)
			}
		}
		if f.take {
			f.args[user+2] = f.args[user+2].(string) + "-again"
		}
		viaPgx := snapshotRow{take: f.take}
		dests := []any{&viaPgx.bound, &viaPgx.until, &viaPgx.commit, &viaPgx.prepare, &viaPgx.h, &viaPgx.openUserID, &viaPgx.channelUserID, &viaPgx.doc}
		if f.take {
			dests = append(dests, &viaPgx.tokens, &viaPgx.granted)
		}
		if err := pool.QueryRow(ctx, sql, f.args...).Scan(dests...); err != nil {
			t.Fatalf("form %d: pgx: %v", i, err)
		}
		if (raw.until == nil) != (viaPgx.until == nil) || raw.until != nil && !raw.until.Equal(*viaPgx.until) {
			t.Fatalf("form %d: until %v, pgx %v", i, raw.until, viaPgx.until)
		}
		raw.until, viaPgx.until = nil, nil
		if !reflect.DeepEqual(raw, viaPgx) {
			t.Fatalf("form %d (%v):\nraw %s\npgx %s", i, f.args, dump(raw), dump(viaPgx))
		}
	}
}

// rawDecoded reports whether snapshotRow.raw takes the statement's row
// itself (its columns are the types it decodes, in binary, as readAlone
// asks for them) rather than leaving it to pgx's Scan.
func rawDecoded(ctx context.Context, t *testing.T, pool *pgxpool.Pool, sql string, take bool, args []any) bool {
	t.Helper()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, sql, sql)
	if err != nil {
		t.Fatal(err)
	}
	var enc paramEncoder
	values, formats, results, err := enc.encode(conn.Conn().TypeMap(), sd, args)
	if err != nil {
		t.Fatal(err)
	}
	rr := conn.Conn().PgConn().ExecStatement(ctx, sd, values, formats, results)
	r := snapshotRow{take: take}
	ok, err := r.raw(rr)
	if _, cerr := rr.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func dump(r snapshotRow) string {
	s := ""
	str := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		return "'" + *p + "'"
	}
	num := func(p *int64) string {
		if p == nil {
			return "NULL"
		}
		return strconv.FormatInt(*p, 10)
	}
	s += "bound=" + str(r.bound) + " commit=" + num(r.commit) + " prepare=" + num(r.prepare) + " head=" + num(r.h) +
		" open=" + num(r.openUserID) + " channel=" + str(r.channelUserID)
	if r.doc == nil {
		return s + " doc=NULL"
	}
	return s + " doc='" + string(r.doc) + "'"
}

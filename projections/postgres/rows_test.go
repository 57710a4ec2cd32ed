package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/projections"
)

// rowOp is one write or read-then-write of a read model's transaction,
// drawn before either store runs it, so both stores get the same ops.
type rowOp struct {
	kind string
	id   int
	n    int
	at   time.Time
	str  string
	null bool
}

// rowBatch is one Update: the read model and its ops.
type rowBatch struct {
	readModel projections.ReadModel
	ops       []rowOp
}

// drawRowBatches draws batches of ops over a few ids, so that rows are
// written, read and written again within a batch and across batches.
func drawRowBatches(seed uint64, batches int) []rowBatch {
	rng := rand.New(rand.NewPCG(seed, seed))
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800), time.FixedZone("y", -7*3600)}
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var out []rowBatch
	for range batches {
		b := rowBatch{}
		var kinds []string
		switch rng.IntN(3) {
		case 0:
			b.readModel = projections.ReadModelUsers
			kinds = []string{"putUser", "putUser", "profile", "profile", "nameGroup", "nameGroup", "putGroup", "putMember", "putMember", "putMember", "deleteMember", "eraseUser"}
		case 1:
			b.readModel = projections.ReadModelDeliveries
			kinds = []string{"putDelivery", "putDelivery", "putDelivery", "attempt", "attempt", "resend", "clearExcerpts", "subject"}
		default:
			b.readModel = projections.ReadModelReports
			kinds = []string{"putReport", "putReport", "viewReport", "eraseReports"}
		}
		for range 1 + rng.IntN(60) {
			k := kinds[rng.IntN(len(kinds))]
			if (k == "eraseUser" || k == "eraseReports" || k == "clearExcerpts") && rng.IntN(4) != 0 {
				k = kinds[0]
			}
			b.ops = append(b.ops, rowOp{
				kind: k, id: 1 + rng.IntN(25), n: rng.IntN(5),
				at:   base.Add(time.Duration(rng.Int64N(int64(48 * time.Hour)))).In(zones[rng.IntN(len(zones))]),
				str:  fmt.Sprintf("s%d-%s", rng.IntN(1000), strings.Repeat("é", rng.IntN(3))),
				null: rng.IntN(3) == 0,
			})
		}
		out = append(out, b)
	}
	return out
}

func strOrNil(o rowOp, s string) *string {
	if o.null {
		return nil
	}
	return &s
}

func drawnTime(o rowOp) *time.Time {
	if o.null {
		return nil
	}
	t := o.at.Add(time.Minute)
	return &t
}

// applyRowBatch runs one drawn batch through s's Update, as the read
// model's projector would: reads of rows it then writes again.
func applyRowBatch(ctx context.Context, s *Store, b rowBatch, pos events.Position) error {
	user := func(o rowOp) projections.User {
		return projections.User{AppID: 1 + int64(o.id%2), OpenUserID: int64(o.id), ChannelUserID: fmt.Sprintf("c-%d", o.id),
			Name: "n" + o.str, Nickname: strOrNil(o, "nick"+o.str), Gender: "unknown", Phone: strOrNil(o, "+86"+o.str),
			Status: "ACTIVE", RegisteredAt: o.at, UpdatedAt: o.at.Add(time.Duration(o.n) * time.Nanosecond)}
	}
	delivery := func(o rowOp) projections.Delivery {
		body := []byte(`{"open_user_id":` + fmt.Sprint(o.id) + `,"x":"` + o.str + `"}`)
		if o.n == 0 {
			body = []byte{}
		}
		code := 200 + o.n
		return projections.Delivery{DeliveryID: fmt.Sprintf("d-%d", o.id), AppID: 1, EndpointID: int64(o.n % 2), EventType: "user.registered",
			SourceEventID: "e" + o.str, SourcePosition: events.Position{Commit: uint64(o.id) << 40, Prepare: uint64(o.id)},
			Cursor: events.Position{Commit: uint64(o.id) * 7, Prepare: uint64(o.id) * 7}, Body: body, Subject: fmt.Sprintf("user-%d", o.id%4),
			Status: "pending", NextAttemptAt: drawnTime(o), LastStatus: &code, LastError: strOrNil(o, "err"+o.str), CreatedAt: o.at, UpdatedAt: o.at}
	}
	report := func(o rowOp) projections.Report {
		return projections.Report{ReportID: int64(o.id), AppID: 1, OpenUserID: int64(o.id % 4), DeviceSN: strOrNil(o, "sn"+o.str),
			FilePath: strOrNil(o, "/f/"+o.str), RawData: []byte(`{"a":1}`), UploadedAt: o.at, ExaminedAt: drawnTime(o),
			Day: o.at.UTC().Format(time.DateOnly), UpdatedAt: o.at}
	}
	switch b.readModel {
	case projections.ReadModelUsers:
		return s.Update(ctx, string(b.readModel), pos, func(tx projections.UserTx) error {
			for _, o := range b.ops {
				var err error
				switch o.kind {
				case "putUser":
					err = tx.PutUser(ctx, user(o))
				case "profile":
					u, rerr := tx.User(ctx, int64(o.id))
					if errors.Is(rerr, projections.ErrNotFound) {
						continue
					} else if rerr != nil {
						return rerr
					}
					u.Name, u.Email, u.UpdatedAt = "p"+o.str, strOrNil(o, o.str+"@x"), o.at
					err = tx.PutUser(ctx, u)
				case "nameGroup":
					err = tx.(interface {
						NameGroup(context.Context, projections.Group) error
					}).NameGroup(ctx, projections.Group{AppID: 1, OpenUserID: int64(o.id % 5), FamilyGroupID: int64(o.id % 7),
						AppGroupID: int64(o.n), Name: "g" + o.str, CreatedAt: o.at, UpdatedAt: o.at})
				case "putGroup":
					err = tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: int64(o.id % 5), FamilyGroupID: int64(o.id % 7),
						AppGroupID: int64(o.n), Name: "G" + o.str, Dissolved: o.null, CreatedAt: o.at, UpdatedAt: o.at})
				case "putMember":
					h := int64(170 + o.n)
					m := projections.Member{AppID: 1, OpenUserID: int64(o.id % 5), MemberID: int64(o.id), AppUserID: "a" + o.str,
						AppGroupID: int64(o.n), FamilyGroupID: int64(o.id % 7), Name: "m" + o.str, Relationship: "self",
						Gender: strOrNil(o, "female"), Phone: strOrNil(o, "1"+o.str), Height: &h, IsDefault: o.n == 1, UpdatedAt: o.at}
					if o.null {
						m.Height = nil
					}
					err = tx.PutMember(ctx, m)
				case "deleteMember":
					err = tx.DeleteMember(ctx, int64(o.id), o.at)
				case "eraseUser":
					err = tx.EraseUser(ctx, int64(o.id))
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	case projections.ReadModelDeliveries:
		return s.UpdateDeliveries(ctx, string(b.readModel), pos, func(tx projections.DeliveryTx) error {
			for _, o := range b.ops {
				var err error
				switch o.kind {
				case "putDelivery":
					err = tx.PutDelivery(ctx, delivery(o))
				case "attempt", "resend":
					d, rerr := tx.Delivery(ctx, fmt.Sprintf("d-%d", o.id))
					if errors.Is(rerr, projections.ErrNotFound) {
						continue
					} else if rerr != nil {
						return rerr
					}
					if o.kind == "attempt" {
						d.Attempts++
						code := 500 + o.n
						if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: d.DeliveryID, Attempt: d.Attempts, At: o.at,
							StatusCode: &code, LatencyMS: int64(o.n), Outcome: "failed", ResponseExcerpt: o.str}); err != nil {
							return err
						}
						d.LastStatus, d.Status = &code, "retrying"
					} else {
						d.Status = "pending"
					}
					d.NextAttemptAt, d.UpdatedAt = drawnTime(o), o.at
					err = tx.PutDelivery(ctx, d)
				case "clearExcerpts":
					err = tx.ClearExcerpts(ctx, fmt.Sprintf("d-%d", o.id))
				case "subject":
					ds, rerr := tx.SubjectDeliveries(ctx, fmt.Sprintf("user-%d", o.id%4))
					if rerr != nil {
						return rerr
					}
					for _, d := range ds {
						d.Body = []byte{}
						if err := tx.PutDelivery(ctx, d); err != nil {
							return err
						}
					}
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	default:
		return s.UpdateReports(ctx, string(b.readModel), pos, func(tx projections.ReportTx) error {
			for _, o := range b.ops {
				var err error
				switch o.kind {
				case "putReport":
					err = tx.PutReport(ctx, report(o))
				case "viewReport":
					r, rerr := tx.Report(ctx, int64(o.id))
					if errors.Is(rerr, projections.ErrNotFound) {
						continue
					} else if rerr != nil {
						return rerr
					}
					r.IsViewed, r.UpdatedAt = true, o.at
					err = tx.PutReport(ctx, r)
				case "eraseReports":
					err = tx.EraseUserReports(ctx, int64(o.id%4))
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// readModelDump is every row of the written tables as JSON, in key order.
func readModelDump(t *testing.T, url string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables := map[string]string{
		"users": "open_user_id", "family_groups": "family_group_id", "family_members": "member_id",
		"user_snapshots": "open_user_id", "webhook_deliveries": "delivery_id", "webhook_attempts": "delivery_id, attempt",
		"reports": "report_id", "checkpoints": "projection",
	}
	out := map[string]string{}
	for table, key := range tables {
		var dump *string
		// The checkpoints' updated_at is the clock's.
		if err := conn.QueryRow(ctx, `SELECT json_agg(to_jsonb(t) - 'updated_at' ORDER BY `+key+`)::text FROM (SELECT * FROM `+table+`) t`).Scan(&dump); err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		if table != "checkpoints" {
			if err := conn.QueryRow(ctx, `SELECT json_agg(to_jsonb(t) ORDER BY `+key+`)::text FROM (SELECT * FROM `+table+`) t`).Scan(&dump); err != nil {
				t.Fatalf("dump %s: %v", table, err)
			}
		}
		if dump == nil {
			dump = new(string)
		}
		out[table] = *dump
	}
	return out
}

// TestRunsOfRowsWriteWhatOneStatementPerRowWrites applies the same drawn
// batches (rows written, read back and written again within a batch and
// across batches, deletes, erasures, reads by subject) to a store that
// writes runs of rows at once and answers reads of its own rows from
// memory, and to one that writes a statement per row and reads the
// database after sending its writes: every table ends the same, row for
// row and byte for byte, and every Update fails or succeeds alike.
func TestRunsOfRowsWriteWhatOneStatementPerRowWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			oldURL, newURL := MigratedDB(t), MigratedDB(t)
			old, err := Open(ctx, oldURL)
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			old.single = true
			runs, err := Open(ctx, newURL)
			if err != nil {
				t.Fatal(err)
			}
			defer runs.Close()
			failed := 0
			for i, b := range drawRowBatches(seed, 60) {
				pos := events.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}
				errOld := applyRowBatch(ctx, old, b, pos)
				errRuns := applyRowBatch(ctx, runs, b, pos)
				if (errOld == nil) != (errRuns == nil) {
					t.Fatalf("batch %d (%s): one statement per row: %v; runs: %v", i, b.readModel, errOld, errRuns)
				}
				if errOld != nil {
					failed++
				}
			}
			if failed > 10 {
				t.Fatalf("%d of 60 batches failed on both: the draw tests little", failed)
			}
			want, got := readModelDump(t, oldURL), readModelDump(t, newURL)
			for table, w := range want {
				if got[table] != w {
					t.Errorf("%s differs:\none statement per row: %s\nruns:                 %s", table, w, got[table])
				}
				if w == "" && table != "checkpoints" {
					t.Errorf("%s: no rows written: the draw tests nothing there", table)
				}
			}
		})
	}
}

// TestARunOfUpsertsIsOneStatement: upserts of distinct rows of one table
// queued in a row go out as one statement, a row written again starts
// another, and a statement of another kind on the table (a delete) ends
// the run before it.
func TestARunOfUpsertsIsOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, MigratedDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	var statements []int
	err = s.Update(ctx, "users", events.Position{Commit: 1, Prepare: 1}, func(utx projections.UserTx) error {
		tx := utx.(*tx)
		opening := tx.batch.Len() // the transaction's BEGIN
		count := func() {
			tx.endRuns()
			statements = append(statements, tx.batch.Len()-opening)
		}
		for i := range 100 {
			_ = tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: int64(i + 1), ChannelUserID: fmt.Sprint(i), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
			_ = tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: int64(i + 1), MemberID: int64(i + 1), Relationship: "self", UpdatedAt: at})
		}
		count() // one statement for the users, one for the members
		_ = tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "0", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
		_ = tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 2, ChannelUserID: "1", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
		_ = tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "0", Name: "again", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
		count() // users 1 and 2, then user 1 again
		_ = tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: 3, MemberID: 3, Relationship: "self", UpdatedAt: at})
		_ = tx.DeleteMember(ctx, 3, at)
		_ = tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: 4, MemberID: 4, Relationship: "self", UpdatedAt: at})
		count() // the member, the delete, the next member
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 4, 7}; fmt.Sprint(statements) != fmt.Sprint(want) {
		t.Fatalf("statements queued: %v, want %v", statements, want)
	}
	u, err := s.User(ctx, 1, 1)
	if err != nil || u.Name != "again" {
		t.Fatalf("user 1 after the runs: %+v, %v; want the last write's name", u, err)
	}
}

// TestReadOfARowWrittenInTheTransactionIsTheDatabasesAnswer: a user or
// delivery read back in the transaction that wrote it (answered from
// memory) equals the same read after the commit (from the database):
// times in microseconds and UTC, optional fields as written; and the
// value read shares nothing with the one written or with a later read.
func TestReadOfARowWrittenInTheTransactionIsTheDatabasesAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, MigratedDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("z", 3600))
	nick, code, msg := "nick", 503, "boom"
	u := projections.User{AppID: 1, OpenUserID: 7, ChannelUserID: "c7", Name: "n", Nickname: &nick, Gender: "female",
		Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at.Add(time.Nanosecond)}
	d := projections.Delivery{DeliveryID: "d7", AppID: 1, EventType: "user.registered", SourceEventID: "e7",
		SourcePosition: events.Position{Commit: 1<<40 + 5, Prepare: 3}, Cursor: events.Position{Commit: 9, Prepare: 9},
		Body: []byte(`{"a":1}`), Status: "retrying", Attempts: 2, NextAttemptAt: &at, LastStatus: &code, LastError: &msg,
		CreatedAt: at, UpdatedAt: at}
	var inTx projections.User
	var inTxD projections.Delivery
	if err := s.Update(ctx, "users", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		if err := tx.PutUser(ctx, u); err != nil {
			return err
		}
		nick = "changed after the put"
		inTx, err = tx.User(ctx, 7)
		if err != nil {
			return err
		}
		*inTx.Nickname = "changed by the reader"
		inTx, err = tx.User(ctx, 7)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 1, Prepare: 1}, func(tx projections.DeliveryTx) error {
		if err := tx.PutDelivery(ctx, d); err != nil {
			return err
		}
		d.Body[0] = 'X'
		inTxD, err = tx.Delivery(ctx, "d7")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var after projections.User
	var afterD projections.Delivery
	if err := s.Update(ctx, "users", events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) (err error) {
		after, err = tx.User(ctx, 7)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 2, Prepare: 2}, func(tx projections.DeliveryTx) (err error) {
		afterD, err = tx.Delivery(ctx, "d7")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	showUser := func(u projections.User) string {
		nick := *u.Nickname
		u.Nickname = nil
		return fmt.Sprintf("%+v nickname=%s", u, nick)
	}
	if showUser(inTx) != showUser(after) || *after.Nickname != "nick" {
		t.Fatalf("user read in its transaction:\n%s\nafter the commit:\n%s", showUser(inTx), showUser(after))
	}
	show := func(d projections.Delivery) string {
		next, status, msg := *d.NextAttemptAt, *d.LastStatus, *d.LastError
		d.NextAttemptAt, d.LastStatus, d.LastError = nil, nil, nil
		return fmt.Sprintf("%+v body=%s next=%v status=%d err=%s", d, d.Body, next, status, msg)
	}
	if show(inTxD) != show(afterD) || string(afterD.Body) != `{"a":1}` {
		t.Fatalf("delivery read in its transaction:\n%s\nafter the commit:\n%s", show(inTxD), show(afterD))
	}
}

// TestAFencedTransactionReadsOnlyAfterItsFence: under a lease, the first
// read a transaction sends to the database goes after its fence, so a
// holder that lost its lease never reads rows a newer holder is writing:
// a transaction whose lease is not current reads nothing (the read fails
// with lease.ErrLost), and a row it wrote itself is still read from
// memory before it.
func TestAFencedTransactionReadsOnlyAfterItsFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, MigratedDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lost := lease.WithFence(ctx, lease.Lease{Name: "projection/users", Holder: "gone", Token: 99})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var readErr error
	err = s.Update(lost, "users", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "c1", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		if _, err := tx.User(ctx, 1); err != nil {
			t.Errorf("the user written in the transaction: %v", err)
		}
		_, readErr = tx.User(ctx, 2)
		return readErr
	})
	if !errors.Is(readErr, lease.ErrLost) || !errors.Is(err, lease.ErrLost) {
		t.Fatalf("read under a lease not current: %v; update: %v; want lease.ErrLost for both", readErr, err)
	}
}

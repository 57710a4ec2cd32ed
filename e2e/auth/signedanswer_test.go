package auth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// On Postgres, with the event store and the read models in one database, a
// signed PATCH writes in two transactions: the route binding with the
// signed write's claim, and its append with its recorded answer (the
// answer's row has the event's xmin). Its replay on another node answers
// the first answer byte for byte, marked replayed, and appends nothing. A
// PATCH that changes nothing and one refused (an unknown user) append
// nothing, and their replays answer their first answers, never 409. A
// signed register's answer is recorded with its user's events too.
func TestSignedWriteAnswerRidesWithItsAppend(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	cfg := func() node.Config {
		return node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: hex.EncodeToString(key), AdminToken: "adm_cluster_test"}
	}
	one, two := harness.Start(t, cfg()), harness.Start(t, cfg())
	a := one.CreateApp("signed-answer")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("answer-1"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)

	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	bindings := func() map[string]string {
		rows, err := conn.Query(t.Context(), `SELECT scope || ' ' || key, xmin::text FROM nonce_bindings`)
		if err != nil {
			t.Fatal(err)
		}
		m, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]string, err error) {
			err = r.Scan(&kv[0], &kv[1])
			return kv, err
		})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, kv := range m {
			out[kv[0]] = kv[1]
		}
		return out
	}
	replayOnTwo := func(captured *http.Request, body []byte) harness.Response {
		req, err := http.NewRequest(captured.Method, two.Srv.URL+captured.URL.Path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = captured.Header.Clone()
		return two.Send(req)
	}

	// signed sends a signed PATCH on node one, and returns its answer and
	// the transactions of the rows it wrote: new bindings by key, and its
	// events on the user's stream.
	signedWrite := func(method, path string, body any) (first harness.Response, raw []byte, captured *http.Request, txs map[string][]string) {
		t.Helper()
		raw = harness.Encode(t, body)
		before := bindings()
		var head int64
		if err := conn.QueryRow(t.Context(), `SELECT coalesce(max(position), 0) FROM es_events`).Scan(&head); err != nil {
			t.Fatal(err)
		}
		captured = a.Request(method, path, body, time.Now())
		first = one.Send(captured)
		txs = map[string][]string{}
		for k, x := range bindings() {
			if _, ok := before[k]; !ok {
				txs[x] = append(txs[x], k)
			}
		}
		rows, err := conn.Query(t.Context(), `SELECT type, xmin::text FROM es_events WHERE position > $1 AND stream NOT LIKE 'delivery-%'`, head)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]string, err error) {
			err = r.Scan(&kv[0], &kv[1])
			return kv, err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range evs {
			txs[kv[1]] = append(txs[kv[1]], "event "+kv[0])
		}
		return first, raw, captured, txs
	}
	signed := func(path string, nickname string) (harness.Response, []byte, *http.Request, map[string][]string) {
		t.Helper()
		return signedWrite("PATCH", path, map[string]any{"nickname": nickname})
	}
	// together checks that the write's events and its recorded answer were
	// written by one transaction.
	together := func(name string, txs map[string][]string) {
		t.Helper()
		answered := false
		for x, rows := range txs {
			hasEvent, hasAnswer := false, false
			for _, r := range rows {
				hasEvent = hasEvent || strings.HasPrefix(r, "event user.")
				hasAnswer = hasAnswer || strings.HasSuffix(r, ":done:0")
			}
			answered = answered || hasAnswer
			if hasEvent != hasAnswer {
				t.Errorf("%s: transaction %s wrote %v: the user's events and the recorded answer are not together", name, x, rows)
			}
		}
		if !answered {
			t.Errorf("%s: no recorded answer: %v", name, txs)
		}
	}
	checkReplay := func(name string, first harness.Response, captured *http.Request, raw []byte) {
		t.Helper()
		before := one.EventCount()
		res := replayOnTwo(captured, raw)
		if res.Status != first.Status || !bytes.Equal(res.Raw, first.Raw) || res.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("%s: replay on the other node answered %d %s (replayed %q), want the first answer %d %s, replayed",
				name, res.Status, res.Raw, res.Header.Get("Idempotent-Replayed"), first.Status, first.Raw)
		}
		if n := one.EventCount(); n != before {
			t.Errorf("%s: the replay appended %d events", name, n-before)
		}
	}

	first, raw, captured, txs := signed(user, "rides")
	if first.Status != http.StatusOK || first.Code() != "0" {
		t.Fatalf("signed PATCH: %d %s", first.Status, first.Raw)
	}
	if len(txs) != 2 {
		t.Errorf("a signed PATCH wrote in %d transactions, want 2 (route binding with claim; append with answer): %v", len(txs), txs)
	}
	together("a profile change", txs)
	checkReplay("a profile change", first, captured, raw)

	same, raw, captured, txs := signed(user, "rides")
	if same.Status != http.StatusOK {
		t.Fatalf("unchanged PATCH: %d %s", same.Status, same.Raw)
	}
	for x, rows := range txs {
		for _, r := range rows {
			if strings.HasPrefix(r, "event ") {
				t.Errorf("an unchanged PATCH appended (%s in %s)", r, x)
			}
		}
	}
	checkReplay("an unchanged profile", same, captured, raw)

	refused, raw, captured, _ := signed("/open/v1/channel/users/999999999", "nobody")
	if refused.Status != http.StatusNotFound {
		t.Fatalf("PATCH of an unknown user: %d %s, want 404", refused.Status, refused.Raw)
	}
	checkReplay("a refused PATCH", refused, captured, raw)

	created, raw, captured, txs := signedWrite("POST", "/open/v1/channel/users", harness.RegisterBody("answer-2"))
	if created.Status != http.StatusCreated {
		t.Fatalf("signed register: %d %s", created.Status, created.Raw)
	}
	together("a register", txs)
	checkReplay("a register", created, captured, raw)
}

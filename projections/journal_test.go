package projections_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

// A journaled directory restored from its positions alone answers as the
// one that followed the whole log, and starts following after its
// checkpoint; positions the log does not hold (another log) are refused.
func TestJournalRestoresFromPositions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	log, reg := memory.New(), catalog.Registry()
	appendOp := func(id int64) {
		t.Helper()
		p, err := reg.Encode(&catalog.OperatorCreated{OperatorID: id, Name: fmt.Sprintf("op%d", id), Role: "admin", TokenHash: fmt.Sprintf("h%d", id)}, events.Metadata{})
		if err != nil {
			t.Fatal(err)
		}
		p.ID = uuid.NewString()
		if _, err := log.Append(ctx, fmt.Sprintf("operator-%d", id), events.NoStream(), p); err != nil {
			t.Fatal(err)
		}
		// Noise the directory ignores, between its events.
		if _, err := log.Append(ctx, "noise-"+uuid.NewString(), events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "noise", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	appendOp(1)
	appendOp(2)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	followed := projections.NewJournal(directory.NewOperators(), log, reg)
	run := subscribe.NewRunner(log, reg, followed, quiet, nil)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = run.Run(runCtx) }()
	head, _ := log.Head(ctx)
	if err := run.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	cp, positions, err := followed.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(positions) != 2 || cp != head {
		t.Fatalf("journal state = %v %v, want 2 positions up to %v", cp, positions, head)
	}

	ops := directory.NewOperators()
	restored := projections.NewJournal(ops, log, reg)
	if err := restored.Restore(ctx, cp, positions); err != nil {
		t.Fatal(err)
	}
	if op, ok := ops.ByTokenHash("h2"); !ok || op.Name != "op2" {
		t.Fatalf("restored directory lookup = %+v, %v", op, ok)
	}
	if got, _ := restored.Checkpoint(ctx); got != cp {
		t.Fatalf("restored checkpoint = %v, want %v", got, cp)
	}
	// It follows on from there.
	appendOp(3)
	run = subscribe.NewRunner(log, reg, restored, quiet, nil)
	runCtx, stop = context.WithCancel(ctx)
	done = make(chan struct{})
	go func() { defer close(done); _ = run.Run(runCtx) }()
	head, _ = log.Head(ctx)
	if err := run.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	if _, ok := ops.ByTokenHash("h3"); !ok {
		t.Fatal("the restored directory did not follow the log after its checkpoint")
	}
	if _, positions, _ := restored.State(ctx); len(positions) != 3 {
		t.Fatalf("journal after following: %v", positions)
	}

	// Positions of another log's events (here: the noise) are refused.
	noise := events.Position{Commit: positions[0].Commit + 1, Prepare: positions[0].Prepare + 1}
	if err := projections.NewJournal(directory.NewOperators(), log, reg).Restore(ctx, cp, []events.Position{noise}); err == nil {
		t.Fatal("restored from a position holding another kind of event")
	}
}

package webhooks

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/relay"
)

func seq(n uint64) events.Position { return events.Position{Commit: n, Prepare: n} }

// The replays' saved checkpoint follows the log while no replay is open,
// stays just before the request of a replay still open (a start reads the
// log from there and resumes it), and moves on once the replay ended.
func TestReplayCheckpointStaysBeforeEveryOpenReplay(t *testing.T) {
	// The node keeps this checkpoint in a file of the data directory.
	saved := relay.NewFileCheckpointsNamed(t.TempDir(), "webhook-replays-checkpoint.json")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the replays themselves do not run here
	s := &replayScheduler{r: &Replayer{Checkpoints: saved}, ctx: ctx, running: map[int64]context.CancelFunc{},
		ended: map[int64]bool{}, open: map[int64]events.Position{}, slots: make(chan struct{}, 1)}
	defer s.wg.Wait()
	cp := s.checkpoints()
	save := func(n uint64, want uint64) {
		t.Helper()
		if err := cp.Save(ctx, seq(n)); err != nil {
			t.Fatal(err)
		}
		if got, _ := saved.Load(ctx); got != seq(want) {
			t.Fatalf("after committing %d the saved checkpoint is %s, want %d", n, got, want)
		}
	}
	save(10, 10)
	s.signal(replaySignal{id: 1, start: true, at: seq(12)})
	s.signal(replaySignal{id: 2, start: true, at: seq(15)})
	save(20, 11)
	s.signal(replaySignal{id: 1, start: true, at: seq(12)}) // read again after a restart
	s.signal(replaySignal{id: 1, start: false, at: seq(21)})
	save(25, 14)
	s.signal(replaySignal{id: 2, start: false, at: seq(26)})
	save(30, 30)
	s.signal(replaySignal{id: 2, start: true, at: seq(15)}) // an ended replay read again holds nothing
	save(31, 31)
}

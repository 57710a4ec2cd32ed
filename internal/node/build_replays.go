package node

import (
	"context"
	"errors"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/relay"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// buildReplayer makes the runner of webhook replays over the dispatcher,
// recording through the replay commands.
func (n *Node) buildReplayer(cfg Config, replays *commands.Replays) *webhooks.Replayer {
	r := &webhooks.Replayer{
		D: n.Dispatcher, Book: replayBook{replays}, Window: cfg.WebhookReplayWindow, Rate: cfg.WebhookReplayRate,
		Log: n.log.With("component", "webhook replays"),
	}
	if cfg.EventStoreURL == "" && cfg.DataDir != "" {
		// The embedded log has no index by type: without a checkpoint
		// every start read the whole log for the few replay events.
		r.Checkpoints = relay.NewFileCheckpointsNamed(cfg.DataDir, webhookReplaysCheckpointFile)
	}
	return r
}

// webhookReplaysCheckpointFile keeps, in the data directory, the log
// position before which an embedded node has no replay left to resume.
const webhookReplaysCheckpointFile = "webhook-replays-checkpoint.json"

// replayBook is the replay commands as the runner reads and records them.
type replayBook struct{ r *commands.Replays }

func (b replayBook) Replay(ctx context.Context, id int64) (webhooks.ReplayRun, error) {
	rp, err := b.r.Get(ctx, 0, id)
	if errors.Is(err, domain.ErrReplayNotFound) {
		return webhooks.ReplayRun{}, nil // not recorded (yet): nothing to run
	}
	if err != nil {
		return webhooks.ReplayRun{}, err
	}
	return webhooks.ReplayRun{Request: rp.Request, Running: rp.Status == commands.ReplayRunning, Counts: domain.ReplayCounts{
		Position: rp.Reached, Matched: rp.Matched, Queued: rp.Queued, Delivered: rp.Delivered, Erased: rp.Erased,
	}}, nil
}

func (b replayBook) Checkpoint(ctx context.Context, id int64, c domain.ReplayCounts, done bool) error {
	_, err := b.r.Checkpoint(ctx, id, c, done, commands.Meta{Actor: "replay:webhooks"})
	return err
}

package privacy

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Forgetter drops a subject's data key from one process's cache
// (keys.Keys.Forget), so the next decrypt asks the key store.
type Forgetter interface {
	Forget(subject string)
}

// ErasureFollower makes an erasure reach this node as soon as the node sees
// the erasure event in the log, not after the key cache's TTL: the key was
// destroyed in the shared key store before user.erased was appended, so
// once the cached key is forgotten every decrypt of the person's fields on
// this node reads as erased.
type ErasureFollower struct {
	// Store is the log as stored (the follower reads no personal field, so
	// it needs no decryption).
	Store events.Store
	// Keys is this node's key cache.
	Keys Forgetter
	// From is the position after which to follow; Run advances it, so a
	// restarted Run resumes where the last one stopped. Set it to the head
	// of the log before this node opens its first key.
	From events.Position
	// Forgot, if set, is called after each subject is forgotten (metrics, tests).
	Forgot func(subject string, at events.Position)
}

var erasedType = (catalog.UserErased{}).EventType()

// Run follows the log until ctx ends or the subscription fails. Only one
// Run may run at a time.
func (f *ErasureFollower) Run(ctx context.Context) error {
	sub, err := f.Store.SubscribeAll(ctx, f.From)
	if err != nil {
		return fmt.Errorf("erasure follower: %w", err)
	}
	defer sub.Close()
	for {
		rec, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("erasure follower: %w", err)
		}
		if rec.Type == erasedType {
			var ev struct {
				OpenUserID int64 `json:"open_user_id"`
			}
			if err := json.Unmarshal(rec.Data, &ev); err != nil {
				return fmt.Errorf("erasure follower: %s at %s: %w", rec.Type, rec.Position, err)
			}
			subject := "user-" + strconv.FormatInt(ev.OpenUserID, 10)
			f.Keys.Forget(subject)
			if f.Forgot != nil {
				f.Forgot(subject, rec.Position)
			}
		}
		f.From = rec.Position
	}
}

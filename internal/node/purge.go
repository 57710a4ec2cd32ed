package node

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// purgeErased returns the loop that purges the Postgres read models every
// interval when an erasure happened since the last purge: each table
// holding personal fields is rewritten, so the erased rows' bytes leave
// its files. It runs on the node holding the "erasure-purge" lease.
func (n *Node) purgeErased(pg *postgres.Store, interval time.Duration) func(context.Context) error {
	purged := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "platform_erasure_purges_total",
		Help: "Rewrites of the Postgres read-model tables holding personal fields after an erasure (VACUUM FULL), so erased plaintext leaves their files.",
	})
	lag := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "platform_erasure_purge_lag_seconds",
		Help: "At the last purge: seconds from the last erasure it covers to the end of the rewrite, how long that plaintext stayed in the table files.",
	})
	n.Metrics.Registry.MustRegister(purged, lag)
	return func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			res, err := pg.PurgeErased(ctx)
			if err != nil {
				// The next tick tries again: the erasure stays recorded.
				n.log.Error("erasure purge failed", "err", err)
				continue
			}
			if res.Waiting {
				n.log.Info("erasure purge waits for every read-model family to apply the last erasure")
			}
			if !res.Purged {
				continue
			}
			purged.Inc()
			if !res.ErasedAt.IsZero() {
				lag.Set(time.Since(res.ErasedAt).Seconds())
			}
			attrs := []any{"took", res.Took, "upto", res.Upto.String()}
			for table, d := range res.Tables {
				attrs = append(attrs, table, d)
			}
			n.log.Info("erasure purge rewrote the tables holding personal fields", attrs...)
		}
	}
}

package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
)

// StreamsQuery reads every event of the streams named in $1 (text[]), in
// stream and revision order, as ReadStream reads one: for a store in the
// same database that reads streams in a round trip it sends anyway
// (webhooks/postgres: a delivery's stream read with its claim).
// CollectStreams reads its rows.
const StreamsQuery = `SELECT ` + columns + ` FROM es_events
WHERE stream = ANY($1::text[]) ORDER BY stream, revision`

// CollectStreams reads StreamsQuery's rows as ReadStream returns events,
// by stream.
func CollectStreams(rows pgx.Rows) (map[string][]events.Recorded, error) {
	recs, err := collect(rows)
	if err != nil {
		return nil, err
	}
	out := map[string][]events.Recorded{}
	for _, r := range recs {
		out[r.Stream] = append(out[r.Stream], r)
	}
	return out, nil
}

package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// PartitionSource reads every partition of the internal topic itself, with
// no consumer group: no membership, no rebalance, nothing for the broker
// to notice when the reader dies. It is meant to run under a lease (one
// reader at a time, subscribe.Pipeline's Leases), so the next holder takes
// over as soon as the lease moves, and it keeps its offsets where the
// lease's fence guards them (Offsets: Postgres, or the data directory of
// an embedded node), saved after the batch's deliveries are recorded, so
// the next holder starts where the effect stopped. Deliveries are keyed by
// their source event (deterministic ids, created only if absent), so the
// few messages between the effect and the saved offset that a new holder
// reads again create nothing twice.
type PartitionSource struct {
	brokers []string
	topic   string
	group   string
	offsets func(ctx context.Context, partition int) (subscribe.Checkpoints, error)
	log     *slog.Logger
}

var _ subscribe.Source = (*PartitionSource)(nil)

// NewPartitionSource reads topic (eventskafka.DefaultInternalTopic if
// empty). offsets gives each partition's store of the next offset to read
// (the position's Commit); a partition whose store holds none starts at
// the offset group committed (the consumer group earlier releases read
// in, so an upgrade neither skips nor replays), else at the oldest message.
func NewPartitionSource(brokers []string, topic, group string, offsets func(ctx context.Context, partition int) (subscribe.Checkpoints, error), log *slog.Logger) *PartitionSource {
	if topic == "" {
		topic = eventskafka.DefaultInternalTopic
	}
	return &PartitionSource{brokers: brokers, topic: topic, group: group, offsets: offsets, log: log}
}

// OffsetCheckpoint is the name under which a partition's offset is kept
// (Postgres relay_checkpoints, or a file in the data directory).
func OffsetCheckpoint(topic string, partition int) string {
	if topic == "" {
		topic = eventskafka.DefaultInternalTopic
	}
	return fmt.Sprintf("webhook-creation.%s.%d", topic, partition)
}

// Open reads the topic's partitions and where each resumes, and starts
// fetching from every one.
func (s *PartitionSource) Open(ctx context.Context) (subscribe.Feed, error) {
	parts, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	starts, err := s.starts(ctx, parts)
	if err != nil {
		return nil, err
	}
	readers := make([]*kafka.Reader, 0, len(parts))
	fetch := make([]func(context.Context) (kafka.Message, error), 0, len(parts))
	for _, p := range parts {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: s.brokers, Topic: s.topic, Partition: p,
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 250 * time.Millisecond,
			ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
				s.log.Warn("kafka reader: "+fmt.Sprintf(msg, args...), "topic", s.topic, "partition", p)
			}),
		})
		if err := r.SetOffset(starts[p]); err != nil {
			for _, o := range append(readers, r) {
				o.Close()
			}
			return nil, fmt.Errorf("kafka source %s/%d: start at %d: %w", s.topic, p, starts[p], err)
		}
		readers = append(readers, r)
		fetch = append(fetch, r.FetchMessage)
	}
	s.log.Info("webhook creation reads the internal topic's partitions", "topic", s.topic, "from", starts)
	next, stop := fetchBatches(ctx, s.topic, fetch...)
	return &partitionFeed{s: s, readers: readers, next: next, stop: stop}, nil
}

// partitions lists the topic's partitions.
func (s *PartitionSource) partitions(ctx context.Context) ([]int, error) {
	var last error
	for _, b := range s.brokers {
		conn, err := (&kafka.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", b)
		if err != nil {
			last = err
			continue
		}
		if d, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(d)
		} else {
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		}
		ps, err := conn.ReadPartitions(s.topic)
		conn.Close()
		if err != nil {
			last = err
			continue
		}
		out := make([]int, 0, len(ps))
		for _, p := range ps {
			out = append(out, p.ID)
		}
		sort.Ints(out)
		if len(out) == 0 {
			return nil, fmt.Errorf("kafka source %s: the topic has no partitions", s.topic)
		}
		return out, nil
	}
	return nil, fmt.Errorf("kafka source %s: read partitions: %w", s.topic, last)
}

// starts is the offset each partition resumes at: its own store, else the
// consumer group's committed offset, else the oldest message.
func (s *PartitionSource) starts(ctx context.Context, parts []int) (map[int]int64, error) {
	out := make(map[int]int64, len(parts))
	var missing []int
	for _, p := range parts {
		cp, err := s.offsets(ctx, p)
		var pos events.Position
		if err == nil {
			pos, err = cp.Load(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("kafka source %s/%d: load offset: %w", s.topic, p, err)
		}
		if pos.Commit > 0 {
			out[p] = int64(pos.Commit)
			continue
		}
		out[p] = kafka.FirstOffset
		missing = append(missing, p)
	}
	if len(missing) == 0 || s.group == "" {
		return out, nil
	}
	client := &kafka.Client{Addr: kafka.TCP(s.brokers...), Timeout: 10 * time.Second}
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: s.group, Topics: map[string][]int{s.topic: missing}})
	if err != nil {
		return nil, fmt.Errorf("kafka source %s: the offsets of group %s: %w", s.topic, s.group, err)
	}
	for _, p := range resp.Topics[s.topic] {
		if p.Error == nil && p.CommittedOffset >= 0 {
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out, nil
}

// partitionFeed is an open PartitionSource; its marks are the last message
// of each partition in a batch.
type partitionFeed struct {
	s       *PartitionSource
	readers []*kafka.Reader
	next    func(context.Context) ([]kafka.Message, []events.Recorded, error)
	stop    func()
}

func (f *partitionFeed) Next(ctx context.Context) ([]events.Recorded, subscribe.Mark, error) {
	msgs, evs, err := f.next(ctx)
	return evs, lastPerPartition(msgs), err
}

// Commit saves, per partition, the offset after the last committed
// message. ctx carries the lease (the pipeline's), which fences the save
// in Postgres: a holder that lost the lease moves no offset.
func (f *partitionFeed) Commit(ctx context.Context, marks []subscribe.Mark) error {
	// The save outlives a shutdown that began during the batch's commit, so
	// a committed batch is not read again after a clean stop; the lease in
	// ctx still fences it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	next := map[int]int64{}
	for _, m := range marks {
		last, ok := m.([]kafka.Message)
		if !ok {
			return fmt.Errorf("kafka source %s: a mark is a batch's messages, not %T", f.s.topic, m)
		}
		for _, msg := range last {
			if msg.Offset+1 > next[msg.Partition] {
				next[msg.Partition] = msg.Offset + 1
			}
		}
	}
	for p, off := range next {
		cp, err := f.s.offsets(ctx, p)
		if err == nil {
			err = cp.Save(ctx, events.Position{Commit: uint64(off), Prepare: uint64(off)})
		}
		if err != nil {
			return fmt.Errorf("kafka source %s/%d: save offset %d: %w", f.s.topic, p, off, err)
		}
	}
	return nil
}

func (f *partitionFeed) Close() error {
	f.stop()
	var first error
	for _, r := range f.readers {
		if err := r.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

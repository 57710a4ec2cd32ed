package kafkatest_test

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/internal/kafkatest"
)

func TestTopicIsFreshAndUsable(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	a := kafkatest.Topic(t, brokers, "kafkatest", 3)
	b := kafkatest.Topic(t, brokers, "kafkatest", 3)
	if a == b {
		t.Fatalf("two topics named %s", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: a, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: a, GroupID: kafkatest.Name(t, "kafkatest"), StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	m, err := r.FetchMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Value) != "v" {
		t.Fatalf("read %q, want v", m.Value)
	}
}

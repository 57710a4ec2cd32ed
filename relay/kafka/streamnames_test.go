package kafka

import (
	"bytes"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
)

// A binding stream of a log written before hashed names is named after the
// channel_user_id: the producer sends it under its hashed name, in the
// message's key, stream header and value alike; other streams keep theirs.
func TestLegacyBindingStreamsLeaveHashed(t *testing.T) {
	names, err := domain.NewPseudonyms(bytes.Repeat([]byte{9}, domain.PseudonymKeySize))
	if err != nil {
		t.Fatal(err)
	}
	p := NewProducer([]string{"127.0.0.1:1"}, "").WithStreamNames(names.Stream)
	legacy := domain.LegacyBindingStream(3, "li.lei@example.com")
	m := p.encode(events.Recorded{ID: "e1", Type: "channel_user.bound", Stream: legacy, Data: []byte(`{"app_id":3}`)})
	want := names.BindingStream(3, "li.lei@example.com")
	if string(m.Key) != want || !strings.Contains(string(m.Value), `"stream":"`+want+`"`) {
		t.Fatalf("key %s value %s, want stream %s", m.Key, m.Value, want)
	}
	for _, h := range m.Headers {
		if h.Key == eventskafka.HeaderStream && string(h.Value) != want {
			t.Fatalf("stream header %s", h.Value)
		}
	}
	if got, err := eventskafka.Decode(m); err != nil || got.Stream != want {
		t.Fatalf("decoded %+v %v", got, err)
	}
	if strings.Contains(string(m.Key)+string(m.Value), "li.lei") {
		t.Fatal("the channel_user_id left in the message")
	}
	if m := p.encode(events.Recorded{ID: "e2", Type: "user.registered", Stream: "user-7"}); string(m.Key) != "user-7" {
		t.Fatalf("another stream renamed: %s", m.Key)
	}
}

package events_test

import (
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
)

type encoded struct {
	N int `json:"n"`
}

func (encoded) EventType() string { return "test.encoded" }

// A direct encoder can only be attached to a known type, once: a second
// one, or one for a type the log cannot decode, is a start-up error.
func TestRegisterEncoderRefusesUnregisteredAndDuplicateTypes(t *testing.T) {
	reg := events.NewRegistry()
	enc := func(b []byte, p events.Payload) ([]byte, bool) { return append(b, `{"n":7}`...), true }
	if err := reg.RegisterEncoder("test.encoded", enc); err == nil || !strings.Contains(err.Error(), "unregistered") {
		t.Fatalf("encoder for an unregistered type: %v", err)
	}
	reg.MustRegister(1, encoded{})
	if err := reg.RegisterEncoder("test.encoded", enc); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterEncoder("test.encoded", enc); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("second encoder: %v", err)
	}
}

// Encode appends what the direct encoder writes, and what it declines is
// encoded by encoding/json, errors included.
func TestEncodeUsesTheDirectEncoderAndFallsBackWhenItDeclines(t *testing.T) {
	reg := events.NewRegistry()
	reg.MustRegister(1, encoded{})
	if err := reg.RegisterEncoder("test.encoded", func(b []byte, p events.Payload) ([]byte, bool) {
		if p.(encoded).N < 0 {
			return b, false
		}
		return append(b, `{"n":"direct"}`...), true
	}); err != nil {
		t.Fatal(err)
	}
	ev, err := reg.Encode(encoded{N: 1}, events.Metadata{})
	if err != nil || string(ev.Data) != `{"n":"direct"}` {
		t.Fatalf("direct: %s %v", ev.Data, err)
	}
	ev, err = reg.Encode(encoded{N: -3}, events.Metadata{})
	if err != nil || string(ev.Data) != `{"n":-3}` {
		t.Fatalf("declined: %s %v", ev.Data, err)
	}
}

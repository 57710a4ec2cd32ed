package commands

import (
	"errors"
	"reflect"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// applier is any aggregate state: it is built by applying its stream's events.
type applier interface{ apply(events.Envelope) }

// given builds an aggregate's state the way its handler does: each event is
// encoded and decoded through the catalog (so the state sees exactly what a
// load would), then applied in order.
func given[S applier](t *testing.T, st S, ps ...events.Payload) S {
	t.Helper()
	reg := catalog.Registry()
	for i, p := range ps {
		ev, err := reg.Encode(p, events.Metadata{AppID: 1})
		if err != nil {
			t.Fatal(err)
		}
		env, err := reg.Decode(events.Recorded{ID: ev.ID, Type: ev.Type, Revision: uint64(i), Data: ev.Data, Meta: ev.Meta})
		if err != nil {
			t.Fatal(err)
		}
		st.apply(env)
	}
	return st
}

// then asserts a decision accepted the command with exactly these events.
func then(t *testing.T, got []events.Payload, err error, want ...events.Payload) {
	t.Helper()
	if err != nil {
		t.Fatalf("refused: %v, want %d events", err, len(want))
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decided\n%#v\nwant\n%#v", got, want)
	}
}

// thenError asserts a decision refused the command with the domain error
// and decided no event.
func thenError(t *testing.T, got []events.Payload, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	if len(got) != 0 {
		t.Fatalf("a refusal decides no event, got %#v", got)
	}
}

// thenInvalid asserts a VALIDATION_ERROR naming the field.
func thenInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var v *domain.ValidationError
	if !errors.As(err, &v) || !v.Has(field) {
		t.Fatalf("error %v, want a validation error on %s", err, field)
	}
}

func ptr[T any](v T) *T { return &v }

// testNames names binding streams in tests as the node does, with a fixed key.
var testNames = func() *domain.Pseudonyms {
	p, err := domain.NewPseudonyms([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return p
}()

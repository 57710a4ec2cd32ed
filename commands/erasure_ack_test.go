package commands

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

var ackNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func erasedUser(t *testing.T) *userState {
	t.Helper()
	return given(t, newUserState(),
		catalog.UserRegistered{AppID: 1, OpenUserID: 5, ChannelUserID: "li@example.com", Profile: catalog.Profile{Name: "Li", Gender: "unknown"}},
		catalog.UserErased{AppID: 1, OpenUserID: 5, Reason: "ticket 9", ErasedBy: "operator:1", ErasedAt: ackNow.Add(-time.Hour)})
}

func TestAcknowledgeErasure_GivenAnErasedUser_WhenTheOwningAppAcknowledges_ThenOneFact(t *testing.T) {
	got, ack, err := decideAcknowledgeErasure(erasedUser(t), 1, "app:1", ackNow)
	want := catalog.ErasureAcknowledged{AppID: 1, OpenUserID: 5, AcknowledgedBy: "app:1", AcknowledgedAt: ackNow}
	then(t, got, err, want)
	if ack != want {
		t.Fatalf("answer %+v, want %+v", ack, want)
	}
}

func TestAcknowledgeErasure_GivenAnAcknowledgedErasure_WhenAcknowledgedAgain_ThenNothingAndTheFirstAnswer(t *testing.T) {
	first := catalog.ErasureAcknowledged{AppID: 1, OpenUserID: 5, AcknowledgedBy: "app:1", AcknowledgedAt: ackNow}
	st := given(t, erasedUser(t), first)
	got, ack, err := decideAcknowledgeErasure(st, 1, "app:1", ackNow.Add(time.Minute))
	then(t, got, err)
	if ack != first {
		t.Fatalf("answer %+v, want the first acknowledgement %+v", ack, first)
	}
}

func TestAcknowledgeErasure_GivenAnotherAppsErasure_WhenAcknowledged_ThenNotFound(t *testing.T) {
	got, _, err := decideAcknowledgeErasure(erasedUser(t), 2, "app:2", ackNow)
	thenError(t, got, err, domain.ErrErasureNotFound)
}

func TestAcknowledgeErasure_GivenALiveOrUnknownUser_WhenAcknowledged_ThenNotFound(t *testing.T) {
	live := given(t, newUserState(), catalog.UserRegistered{AppID: 1, OpenUserID: 5, Profile: catalog.Profile{Name: "Li", Gender: "unknown"}})
	for name, st := range map[string]*userState{"live": live, "unknown": newUserState()} {
		got, _, err := decideAcknowledgeErasure(st, 1, "app:1", ackNow)
		if !errors.Is(err, domain.ErrErasureNotFound) || len(got) != 0 {
			t.Fatalf("%s user: %v %v, want ERASURE_NOT_FOUND and nothing decided", name, got, err)
		}
	}
}

// Concurrent acknowledges of one erasure append one event and all answer
// the same acknowledgement time.
func TestAcknowledgeErasureConcurrentDuplicatesAppendOnce(t *testing.T) {
	s := newScenario(t).given(domain.UserStream(5),
		catalog.UserRegistered{AppID: 1, OpenUserID: 5, Profile: catalog.Profile{Name: "Li", Gender: "unknown"}},
		catalog.UserErased{AppID: 1, OpenUserID: 5, Reason: "ticket 9", ErasedBy: "operator:1", ErasedAt: ackNow})
	u := s.users
	const n = 8
	acks := make([]ErasureAck, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acks[i], errs[i] = u.AcknowledgeErasure(context.Background(), 1, 5, Meta{Actor: "app:1"})
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("acknowledge %d: %v", i, errs[i])
		}
		if !acks[i].AcknowledgedAt.Equal(acks[0].AcknowledgedAt) || !acks[i].ErasedAt.Equal(ackNow) {
			t.Fatalf("acknowledge %d answered %+v, want %+v", i, acks[i], acks[0])
		}
	}
	s.thenTypes("user.erasure_acknowledged")
	_, err := u.AcknowledgeErasure(context.Background(), 2, 5, Meta{Actor: "app:2"})
	s.thenError(err, domain.ErrErasureNotFound)
}

package commands

import (
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given/When/Then of a password reset: any password change retires every
// reset link asked for before it.
func TestDecideResetPassword(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	signedUp := catalog.DeveloperSignedUp{DeveloperID: 7, Email: "a@example.com", SealedPasswordHash: "old"}
	asked := func(hash string) catalog.DeveloperPasswordResetRequested {
		return catalog.DeveloperPasswordResetRequested{DeveloperID: 7, TokenHash: hash, ExpiresAt: now.Add(ResetTokenTTL)}
	}
	changed := func(hash string) catalog.DeveloperPasswordChanged {
		return catalog.DeveloperPasswordChanged{DeveloperID: 7, SealedPasswordHash: "new", ResetTokenHash: hash}
	}

	t.Run("the newest of two links sets the password", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, asked("t1"), asked("t2"))
		got, err := decideResetPassword(dev, "t2", "new", now)
		then(t, got, err, changed("t2"))
	})
	t.Run("the older link still works while unused", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, asked("t1"), asked("t2"))
		got, err := decideResetPassword(dev, "t1", "new", now)
		then(t, got, err, changed("t1"))
	})
	t.Run("a reset with the newer link ends the older one", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, asked("t1"), asked("t2"), changed("t2"))
		got, err := decideResetPassword(dev, "t1", "newer", now)
		thenError(t, got, err, domain.ErrResetTokenInvalid)
	})
	t.Run("a used link is refused", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, asked("t1"), changed("t1"))
		got, err := decideResetPassword(dev, "t1", "newer", now)
		thenError(t, got, err, domain.ErrResetTokenInvalid)
	})
	t.Run("a password change without a link ends every link", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, asked("t1"), asked("t2"), changed(""))
		for _, tok := range []string{"t1", "t2"} {
			got, err := decideResetPassword(dev, tok, "newer", now)
			thenError(t, got, err, domain.ErrResetTokenInvalid)
		}
	})
	t.Run("a link asked for after a change works", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, asked("t1"), changed("t1"), asked("t3"))
		got, err := decideResetPassword(dev, "t3", "newer", now)
		then(t, got, err, catalog.DeveloperPasswordChanged{DeveloperID: 7, SealedPasswordHash: "newer", ResetTokenHash: "t3"})
	})
	t.Run("an expired link is refused", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, asked("t1"))
		got, err := decideResetPassword(dev, "t1", "new", now.Add(ResetTokenTTL))
		thenError(t, got, err, domain.ErrResetTokenInvalid)
	})
	t.Run("an unknown link or account is refused", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, asked("t1"))
		got, err := decideResetPassword(dev, "other", "new", now)
		thenError(t, got, err, domain.ErrResetTokenInvalid)
		got, err = decideResetPassword(&Developer{}, "t1", "new", now)
		thenError(t, got, err, domain.ErrResetTokenInvalid)
	})
	t.Run("the change ends every session", func(t *testing.T) {
		dev := given(t, &Developer{}, signedUp, catalog.DeveloperSignedIn{DeveloperID: 7, SessionHash: "s1"}, asked("t1"), changed("t1"))
		if dev.SessionOpen("s1") {
			t.Fatal("a session survived the password change")
		}
	})
}

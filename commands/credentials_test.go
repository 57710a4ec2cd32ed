package commands

import (
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given/When/Then of the OAuth token and uploader decisions.

func TestIssueTokenDecision(t *testing.T) {
	then(t, []events.Payload{decideIssueToken(9, "daily_report", "h1", fixedNow)}, nil,
		catalog.TokenIssued{TokenHash: "h1", AppID: 9, Scope: "daily_report", ExpiresAt: fixedNow.Add(TokenLifetime)})
}

func TestRevokeTokenDecision(t *testing.T) {
	issued := catalog.TokenIssued{TokenHash: "h1", AppID: 9, Scope: "daily_report", ExpiresAt: fixedNow}
	then(t, decideRevokeToken(given(t, &tokenState{}, issued), 9), nil, catalog.TokenRevoked{TokenHash: "h1", AppID: 9})
	// Unknown, foreign and revoked tokens decide nothing, and are no error.
	then(t, decideRevokeToken(given(t, &tokenState{}), 9), nil)
	then(t, decideRevokeToken(given(t, &tokenState{}, issued), 8), nil)
	then(t, decideRevokeToken(given(t, &tokenState{}, issued, catalog.TokenRevoked{TokenHash: "h1", AppID: 9}), 9), nil)
}

func TestRegisterUploaderDecision(t *testing.T) {
	then(t, []events.Payload{decideRegisterUploader(3, "lab", "h3")}, nil, catalog.UploaderRegistered{UploaderID: 3, Name: "lab", TokenHash: "h3"})
}

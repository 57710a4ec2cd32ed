package commands

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// TokenLifetime is how long an OAuth access token lives.
const TokenLifetime = 2 * time.Hour

// CredentialIssuer issues the bearer credentials that are not app keys: OAuth
// access tokens for the daily report and uploader tokens for ingestion.
type CredentialIssuer struct {
	streams
	ids *Allocator
	now func() time.Time
}

// NewCredentialIssuer builds the handler.
func NewCredentialIssuer(store events.Store, reg *events.Registry, ids *Allocator, now func() time.Time) *CredentialIssuer {
	return &CredentialIssuer{streams: streams{store, reg}, ids: ids, now: now}
}

// AccessToken is an issued OAuth 2.0 token, shown once.
type AccessToken struct {
	Token     string
	Scope     string
	ExpiresIn time.Duration
	Position  events.Position
}

// decideIssueToken records a token by its hash (the token itself, random,
// is generated outside and never recorded); it lives TokenLifetime from now.
func decideIssueToken(appID int64, scope, hash string, now time.Time) events.Payload {
	return catalog.TokenIssued{TokenHash: hash, AppID: appID, Scope: scope, ExpiresAt: now.UTC().Add(TokenLifetime)}
}

// tokenState is an OAuth token's aggregate.
type tokenState struct {
	issued  *catalog.TokenIssued
	revoked bool
}

func (s *tokenState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.TokenIssued:
		s.issued = p
	case *catalog.TokenRevoked:
		s.revoked = true
	}
}

// decideRevokeToken ends the app's own live token; any other token decides
// nothing and is no error (RFC 7009).
func decideRevokeToken(st *tokenState, appID int64) []events.Payload {
	if st.issued == nil || st.issued.AppID != appID || st.revoked {
		return nil
	}
	return []events.Payload{catalog.TokenRevoked{TokenHash: st.issued.TokenHash, AppID: appID}}
}

// IssueToken grants an app an access token (client credentials grant).
func (c *CredentialIssuer) IssueToken(ctx context.Context, appID int64, scope string, meta Meta) (AccessToken, error) {
	tok := secrets.Random("at_", 24)
	hash := domain.HashToken(tok)
	meta.AppID = appID
	res, err := c.append(ctx, "oauth-token-"+hash, 0, meta, decideIssueToken(appID, scope, hash, c.now()))
	if err != nil {
		return AccessToken{}, err
	}
	return AccessToken{Token: tok, Scope: scope, ExpiresIn: TokenLifetime, Position: res.Position}, nil
}

// RevokeToken ends an app's token (RFC 7009: unknown or foreign tokens are
// not an error, so a caller learns nothing about other apps' tokens).
func (c *CredentialIssuer) RevokeToken(ctx context.Context, appID int64, tok string, meta Meta) (events.Position, error) {
	hash := domain.HashToken(tok)
	stream := "oauth-token-" + hash
	var st tokenState
	version, pos, err := c.load(ctx, stream, st.apply)
	ps := decideRevokeToken(&st, appID)
	if err != nil || len(ps) == 0 {
		return pos, err
	}
	meta.AppID = appID
	res, err := c.append(ctx, stream, version, meta, ps...)
	if events.IsConflict(err) {
		return pos, nil
	}
	return res.Position, err
}

// UploaderCredentials are shown once, at registration.
type UploaderCredentials struct {
	UploaderID int64
	Name       string
	Token      string
	Position   events.Position
}

// decideRegisterUploader records a new uploader (under a fresh id) with
// its token's hash only.
func decideRegisterUploader(id int64, name, tokenHash string) events.Payload {
	return catalog.UploaderRegistered{UploaderID: id, Name: name, TokenHash: tokenHash}
}

// RegisterUploader gives a reporting side its own ingestion token.
func (c *CredentialIssuer) RegisterUploader(ctx context.Context, name string, meta Meta) (UploaderCredentials, error) {
	v := &domain.ValidationError{}
	if name == "" {
		v.Add("name", "is required")
	} else if utf8.RuneCountInString(name) > 64 {
		v.Add("name", "must be at most 64 characters")
	}
	if err := v.Err(); err != nil {
		return UploaderCredentials{}, err
	}
	id, err := c.ids.Next(ctx, "uploader")
	if err != nil {
		return UploaderCredentials{}, err
	}
	tok := secrets.Random("upl_", 24)
	res, err := c.append(ctx, domain.UploaderStream(id), 0, meta, decideRegisterUploader(id, name, domain.HashToken(tok)))
	if err != nil {
		return UploaderCredentials{}, err
	}
	return UploaderCredentials{UploaderID: id, Name: name, Token: tok, Position: res.Position}, nil
}

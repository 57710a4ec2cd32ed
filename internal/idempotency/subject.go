package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
)

// SubjectKeys holds the data keys of channel users (datakeys.Keys implements
// it). An answer about a user is sealed with the user's data key, so that
// erasing the user (which destroys the key) shreds the stored answer too.
type SubjectKeys interface {
	DataKey(ctx context.Context, subject string) (datakeys.Key, error)
	ByID(ctx context.Context, keyID string) (datakeys.Key, error)
}

// dataKeyPrefix marks a body sealed with a subject's data key; a body
// sealed with the master key starts with the master sealer's own "v1:".
const dataKeyPrefix = "dk1:"

// errErased says a stored answer was sealed with a data key that has since
// been destroyed: its user was erased.
var errErased = errors.New("idempotency: the stored answer's user was erased")

var userPath = regexp.MustCompile(`^/open/v1/channel/users/([0-9]+)(?:/|$)`)

// answerSubject names the channel user a keyed request's answer is about,
// or "" when it is about none: the answer's data.open_user_id (a register),
// else the user in the path, else the request body's open_user_id or
// user_id (reports, orders of a user).
func answerSubject(r *http.Request, body, answer []byte) string {
	var env struct {
		Data struct {
			OpenUserID int64 `json:"open_user_id"`
		} `json:"data"`
	}
	if json.Unmarshal(answer, &env) == nil && env.Data.OpenUserID > 0 {
		return domain.UserStream(env.Data.OpenUserID)
	}
	if m := userPath.FindStringSubmatch(r.URL.Path); m != nil {
		if id, err := strconv.ParseInt(m[1], 10, 64); err == nil && id > 0 {
			return domain.UserStream(id)
		}
	}
	var req struct {
		OpenUserID int64 `json:"open_user_id"`
		UserID     int64 `json:"user_id"`
	}
	if json.Unmarshal(body, &req) == nil {
		for _, id := range []int64{req.OpenUserID, req.UserID} {
			if id > 0 {
				return domain.UserStream(id)
			}
		}
	}
	return ""
}

// sealAnswer seals an answer with its subject's data key, or with the
// master key when it is about no user (or the user's key is already
// destroyed: the answer then says the user was not found). The associated
// data binds the sealed body to its key's stream.
func (k *Keeper) sealAnswer(ctx context.Context, stream, subject string, plain []byte) (string, error) {
	b, err := k.appendSealed(ctx, nil, stream, subject, plain)
	return string(b), err
}

// appendSealed is sealAnswer appending the sealed answer to dst, so that a
// record made of a header and the sealed body is built in one buffer: the
// nonce and ciphertext are written past the room their base64 takes, and
// encoded back into it.
func (k *Keeper) appendSealed(ctx context.Context, dst []byte, stream, subject string, plain []byte) ([]byte, error) {
	if k.Keys != nil && subject != "" {
		key, err := k.Keys.DataKey(ctx, subject)
		switch {
		case err == nil:
			n := key.AEAD.NonceSize()
			sealedLen := n + len(plain) + key.AEAD.Overhead()
			encLen := base64.StdEncoding.EncodedLen(sealedLen)
			dst = slices.Grow(dst, len(dataKeyPrefix)+len(key.ID)+1+encLen+sealedLen)
			dst = append(append(append(dst, dataKeyPrefix...), key.ID...), ':')
			at := len(dst)
			// The ciphertext lies after the base64's room, so encoding it
			// forward never overwrites what is still to be read.
			nonce := dst[at+encLen : at+encLen+n]
			if _, err := rand.Read(nonce); err != nil {
				return nil, err
			}
			ct := key.AEAD.Seal(nonce, nonce, plain, []byte(stream))
			base64.StdEncoding.Encode(dst[at:at+encLen], ct)
			return dst[:at+encLen], nil
		case !errors.Is(err, datakeys.ErrDestroyed):
			return nil, fmt.Errorf("idempotency: data key of the answer: %w", err)
		}
	}
	if a, ok := k.Sealer.(appendSealer); ok {
		return a.AppendSeal(dst, plain)
	}
	sealed, err := k.Sealer.Seal(string(plain))
	if err != nil {
		return nil, err
	}
	return append(dst, sealed...), nil
}

// appendSealer is a Sealer that appends a sealed value to a buffer
// (internal/secrets implements it).
type appendSealer interface {
	AppendSeal(dst, plain []byte) ([]byte, error)
}

// openAnswer opens a stored answer; errErased when its user was erased.
func (k *Keeper) openAnswer(ctx context.Context, stream, sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, dataKeyPrefix)
	if !ok {
		return k.Sealer.Open(sealed)
	}
	keyID, b64, ok := strings.Cut(rest, ":")
	if !ok || k.Keys == nil {
		return "", errors.New("idempotency: malformed stored answer")
	}
	key, err := k.Keys.ByID(ctx, keyID)
	if errors.Is(err, datakeys.ErrNotFound) {
		return "", errErased
	}
	if err != nil {
		return "", err
	}
	ct, err := base64.StdEncoding.DecodeString(b64)
	n := key.AEAD.NonceSize()
	if err != nil || len(ct) < n {
		return "", errors.New("idempotency: malformed stored answer")
	}
	plain, err := key.AEAD.Open(nil, ct[:n], ct[n:], []byte(stream))
	if err != nil {
		return "", errors.New("idempotency: the stored answer does not authenticate")
	}
	return string(plain), nil
}

package measureplugin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
)

// Window is the spec's ±300 s tolerance between a launch timestamp and the verifier's clock.
const Window = 300 * time.Second

// ErrTimestampFormat means the timestamp is not exactly 10 decimal digits (milliseconds are the usual mistake).
var ErrTimestampFormat = errors.New("plugin: timestamp must be 10-digit Unix seconds")

// ErrTimestampWindow means the timestamp is more than 300 s away from the verifier's clock.
var ErrTimestampWindow = errors.New("plugin: timestamp outside the ±300 s window")

// ErrSign means the launch signature does not match; callers should not say more to the client.
var ErrSign = errors.New("plugin: launch signature mismatch")

// ErrNonceFormat means the nonce is empty, longer than 64 bytes or contains '|', which would make the signed text ambiguous.
var ErrNonceFormat = errors.New("plugin: nonce must be 1-64 bytes without '|'")

// Sign is the spec's launch signature, so hosts and the platform compute byte-identical values.
func Sign(appSecret, appKey, thirdUserID, timestamp, nonce string) string {
	return hex.EncodeToString(signMAC(appSecret, appKey, thirdUserID, timestamp, nonce))
}

func signMAC(appSecret, appKey, thirdUserID, timestamp, nonce string) []byte {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(appKey + "|" + thirdUserID + "|" + timestamp + "|" + nonce))
	return m.Sum(nil)
}

// VerifySign compares in constant time so response timing reveals nothing about the expected value; hex case is ignored.
func VerifySign(appSecret, appKey, thirdUserID, timestamp, nonce, sign string) bool {
	got, err := hex.DecodeString(sign)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, signMAC(appSecret, appKey, thirdUserID, timestamp, nonce))
}

// CheckTimestamp enforces the spec's 10-digit-seconds format and ±300 s window (both edges inclusive).
func CheckTimestamp(ts string, now time.Time) error {
	if !isTimestamp(ts) {
		return ErrTimestampFormat
	}
	sec, _ := strconv.ParseInt(ts, 10, 64) // 10 digits always fit
	d := now.Unix() - sec
	if d < -int64(Window/time.Second) || d > int64(Window/time.Second) {
		return ErrTimestampWindow
	}
	return nil
}

func isTimestamp(ts string) bool {
	if len(ts) != 10 {
		return false
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < '0' || ts[i] > '9' {
			return false
		}
	}
	return true
}

// timestampOf renders now as 10-digit seconds, refusing instants outside 2001-09-09..2286-11-20.
func timestampOf(now time.Time) (string, error) {
	ts := strconv.FormatInt(now.Unix(), 10)
	if !isTimestamp(ts) {
		return "", ErrTimestampFormat
	}
	return ts, nil
}

func checkNonce(nonce string) error {
	if nonce == "" || len(nonce) > 64 {
		return ErrNonceFormat
	}
	for i := 0; i < len(nonce); i++ {
		if nonce[i] == '|' {
			return ErrNonceFormat
		}
	}
	return nil
}

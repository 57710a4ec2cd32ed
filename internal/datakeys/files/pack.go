package files

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
)

// A node holds one entry per person in memory, so a key's record is kept
// in the fixed form datakeys.Keys makes it in rather than as four strings
// and a time (about 350 bytes a person as strings, 128 packed): its key id
// is the subject, "~" and 8 bytes in hex, and its sealed form is "v1:" and
// the base64 of 72 bytes (nonce, the key's base64, tag). A record of any
// other form (an older format, another sealer) is kept whole beside the
// index (Store.whole).
const (
	keyIDBytes  = 8
	sealedBytes = 72
	sealedB64   = (sealedBytes + 2) / 3 * 4 // base64.StdEncoding.EncodedLen(sealedBytes)
	sealedText  = "v1:"
)

// entry is a subject's place in the index: its live line and its record.
type entry struct {
	off       int64
	n         int32 // the live key line's length without its newline; 0 once destroyed
	destroyed bool
	whole     bool // the record is Store.whole's, not packed here
	ticket    uint64
	created   int64  // unix nanoseconds, UTC
	master    string // shared by the entries read or written one after another
	keyID     [keyIDBytes]byte
	sealed    [sealedBytes]byte
}

// pack stores rec in e, reporting false when rec is not of the packed
// form (then nothing of e is set).
func (e *entry) pack(rec datakeys.Record) bool {
	if !packKey(e, rec.Subject, rec.KeyID, rec.Sealed, rec.Created) {
		return false
	}
	e.master = rec.MasterKeyID
	return true
}

// packKey stores a key's id, sealed form and creation in e, from a
// record's strings or a line's bytes, reporting false when they are not of
// the packed form (then nothing of e is set).
func packKey[S string | []byte](e *entry, subject string, keyID, sealed S, created time.Time) bool {
	if len(keyID) != len(subject)+1+2*keyIDBytes || string(keyID[:len(subject)]) != subject || keyID[len(subject)] != '~' ||
		len(sealed) != len(sealedText)+sealedB64 || string(sealed[:len(sealedText)]) != sealedText ||
		time.Unix(0, created.UnixNano()).UTC() != created {
		return false
	}
	suffix := keyID[len(subject)+1:]
	var id [keyIDBytes]byte
	// Lower-case hex only: an upper-case id decodes to the same bytes but
	// would not read back as the same string.
	for i := 0; i < len(suffix); i++ {
		if c := suffix[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	if _, err := hex.Decode(id[:], []byte(suffix)); err != nil {
		return false
	}
	var text [sealedBytes]byte
	// Strict: a text with non-zero padding bits decodes to the same bytes
	// but would not read back as the same string. Its length (96, no
	// padding) leaves no room for the line breaks the decoder skips.
	if n, err := base64.StdEncoding.Strict().Decode(text[:], []byte(sealed[len(sealedText):])); err != nil || n != sealedBytes {
		return false
	}
	e.keyID, e.sealed, e.created = id, text, created.UnixNano()
	return true
}

// record returns the packed record of subject.
func (e *entry) record(subject string) datakeys.Record {
	var hexID [2 * keyIDBytes]byte
	hex.Encode(hexID[:], e.keyID[:])
	var id strings.Builder
	id.Grow(len(subject) + 1 + len(hexID))
	id.WriteString(subject)
	id.WriteByte('~')
	id.Write(hexID[:])
	var text [len(sealedText) + sealedB64]byte
	copy(text[:], sealedText)
	base64.StdEncoding.Encode(text[len(sealedText):], e.sealed[:])
	return datakeys.Record{Subject: subject, KeyID: id.String(), MasterKeyID: e.master, Sealed: string(text[:]), Created: time.Unix(0, e.created).UTC()}
}

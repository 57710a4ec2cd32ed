package files

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
)

// parsedLine is one line of the log as Open reads it: where it is, and
// its record (or why it is none).
type parsedLine struct {
	off     int64 // the line, without its newline
	n       int32
	blank   bool // blanked (destroyed or superseded key, spaces)
	subject string
	e       *entry // the line's index entry, packed on the parsing core
	// l is the record of a line parseKeyLine did not pack (nil for a key
	// it did): a start holds one parsedLine per person until the index is
	// built, and a line's five strings and two times for each would be
	// most of what the start allocates for its key log.
	l   *line
	err error
}

// item is what r records.
func (r *parsedLine) item() item {
	if r.l != nil {
		return r.l.item()
	}
	return item{rec: datakeys.Record{Subject: r.subject}}
}

// op is r's record kind.
func (r *parsedLine) op() string {
	if r.l != nil {
		return r.l.Op
	}
	return "key"
}

// parsedLog is the key log as Open read it, cut into lines and decoded.
type parsedLog struct {
	// parts are the log's lines in contiguous parts, in order.
	parts [][]parsedLine
	lines int
	// clean says every line is blank, a key or a tombstone of a valid
	// subject: indexing the log cannot fail on a line.
	clean bool
	// platform is the last line of each platform.* subject, made by the
	// first get of one: a start asks for several of these few before the
	// index is built, and each would otherwise scan every person's line.
	platform *platformLines
}

// platformPrefix begins the subjects of the platform's own secrets and
// flags (node.PseudonymSecret, …), as against people's.
const platformPrefix = "platform."

type platformLines struct {
	once  sync.Once
	lines map[string]*parsedLine
}

// parseLines cuts b (whole lines) into lines and decodes them, on every
// core in contiguous parts (each cut at a line's end and cut into lines
// by its own core), since a start reads one line per person; the caller
// applies them in order.
func parseLines(b []byte) parsedLog {
	return parseIn(b, min(runtime.GOMAXPROCS(0), max(len(b)/(1<<20), 1)))
}

// parseIn is parseLines in parts parts.
func parseIn(b []byte, parts int) parsedLog {
	out := parsedLog{parts: make([][]parsedLine, parts), clean: true, platform: &platformLines{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for p, lo := 0, 0; p < parts; p++ {
		hi := len(b)
		if p < parts-1 {
			hi = max(lo, (p+1)*len(b)/parts)
			if nl := bytes.IndexByte(b[hi:], '\n'); nl >= 0 {
				hi += nl + 1
			} else {
				hi = len(b)
			}
		}
		wg.Add(1)
		go func(p, lo int, b []byte) {
			defer wg.Done()
			lines, clean := parsePart(b, int64(lo))
			mu.Lock()
			out.parts[p], out.lines, out.clean = lines, out.lines+len(lines), out.clean && clean
			mu.Unlock()
		}(p, lo, b[lo:hi])
		lo = hi
	}
	wg.Wait()
	return out
}

// entryBlock is how many keys' entries parsePart makes at once.
const entryBlock = 1024

// parsePart decodes the whole lines of b, which starts at byte base of the
// log; clean is false if a line would fail the log's indexing.
func parsePart(b []byte, base int64) (out []parsedLine, clean bool) {
	// Made at its length: grown by appends, a log of a million people
	// would copy its lines (about 170 bytes each) several times over.
	out = make([]parsedLine, 0, bytes.Count(b, []byte{'\n'}))
	// The keys' entries are made a block at a time (a block lives as long
	// as the index holds any of its entries; only keys take one).
	var entries []entry
	clean = true
	var master string // the last master key id read, shared by the lines after it
	for off := 0; off < len(b); {
		n := bytes.IndexByte(b[off:], '\n')
		raw := b[off : off+n]
		out = append(out, parsedLine{off: base + int64(off), n: int32(n)})
		off += n + 1
		r := &out[len(out)-1]
		if len(bytes.Trim(raw, " \x00")) == 0 {
			r.blank = true
			continue
		}
		if len(entries) == 0 {
			entries = make([]entry, entryBlock)
		}
		if subject, ok := parseKeyLine(raw, &entries[0], &master); ok {
			r.e, entries = &entries[0], entries[1:]
			r.e.off, r.e.n = r.off, r.n
			r.subject = subject
			clean = clean && datakeys.ValidSubject(subject)
			continue
		}
		l, err := parseLine(raw)
		if r.l, r.err = &l, err; err == nil {
			r.subject = l.Subject
			r.e = newEntry(l.item(), r.off, int64(r.n), 0)
			if !r.e.destroyed && !r.e.whole {
				if r.e.master == master {
					r.e.master = master
				} else {
					master = r.e.master
				}
			}
		}
		clean = clean && err == nil && datakeys.ValidSubject(l.Subject) && (l.Op == "key" || l.Op == "destroyed")
	}
	return out, clean
}

// get is subject's record as the index built from l holds it: its last
// line decides.
func (l *parsedLog) get(subject string) (datakeys.Record, error) {
	if strings.HasPrefix(subject, platformPrefix) {
		pl := l.platform
		pl.once.Do(func() {
			pl.lines = map[string]*parsedLine{}
			for _, lines := range l.parts {
				for i := range lines {
					if r := &lines[i]; !r.blank && strings.HasPrefix(r.subject, platformPrefix) {
						pl.lines[r.subject] = r
					}
				}
			}
		})
		return pl.lines[subject].record(subject)
	}
	for p := len(l.parts) - 1; p >= 0; p-- {
		lines := l.parts[p]
		for i := len(lines) - 1; i >= 0; i-- {
			if r := &lines[i]; !r.blank && r.subject == subject {
				return r.record(subject)
			}
		}
	}
	return datakeys.Record{}, datakeys.ErrNotFound
}

// record is subject's record as line r (nil: none) gives it.
func (r *parsedLine) record(subject string) (datakeys.Record, error) {
	switch {
	case r == nil:
		return datakeys.Record{}, datakeys.ErrNotFound
	case r.e.destroyed:
		return datakeys.Record{}, datakeys.ErrDestroyed
	case r.e.whole:
		return r.l.item().rec, nil
	}
	return r.e.record(subject), nil
}

// parseLine decodes one record of the log. The log's lines are written by
// encodeLine (json.Marshal's bytes, written by hand: one flat object of
// plain strings), and a start reads hundreds of thousands of them, so
// those are decoded by hand, about ten times faster than through
// reflection; a line with anything else (an escape, a non-ASCII byte, a
// non-string value) goes through encoding/json, so both paths accept
// exactly the same lines.
func parseLine(raw []byte) (line, error) {
	if l, ok := parseFlat(raw); ok {
		return l, nil
	}
	var l line
	err := json.Unmarshal(raw, &l)
	return l, err
}

// parseKeyLine decodes a key line as parseFlat does, straight into its
// packed entry e, without making the strings of its id, its sealed form and
// (when it is *master's) its master key's id; ok is false, and nothing of
// e set, for any other line (a tombstone, a repeated or missing field, a
// record that does not pack), which parseLine then decodes.
func parseKeyLine(b []byte, e *entry, master *string) (subject string, ok bool) {
	var op, subj, keyID, masterID, sealed, created []byte
	if !flatFields(b, func(key, val []byte) bool {
		var field *[]byte
		switch string(key) {
		case "op":
			field = &op
		case "subject":
			field = &subj
		case "key_id":
			field = &keyID
		case "master_key_id":
			field = &masterID
		case "sealed":
			field = &sealed
		case "created":
			field = &created
		default:
			return false
		}
		if *field != nil {
			return false // repeated: parseLine keeps the last
		}
		*field = val
		return true
	}) {
		return "", false
	}
	var t time.Time
	if string(op) != "key" || subj == nil || masterID == nil || created == nil || t.UnmarshalText(created) != nil {
		return "", false
	}
	subject = string(subj)
	if !packKey(e, subject, keyID, sealed, t) {
		return "", false
	}
	if string(masterID) != *master {
		*master = string(masterID)
	}
	e.master = *master
	return subject, true
}

// parseFlat decodes {"k":"v",...} with plain ASCII strings, no escapes and
// no whitespace; ok is false for anything else.
func parseFlat(b []byte) (l line, ok bool) {
	ok = flatFields(b, func(key, val []byte) bool {
		switch string(key) {
		case "op":
			l.Op = string(val)
		case "subject":
			l.Subject = string(val)
		case "key_id":
			l.KeyID = string(val)
		case "master_key_id":
			l.MasterKeyID = string(val)
		case "sealed":
			l.Sealed = string(val)
		case "created", "at":
			var t time.Time
			if err := t.UnmarshalText(val); err != nil { // what encoding/json uses
				return false
			}
			if string(key) == "created" {
				l.Created = t
			} else {
				l.At = t
			}
		default:
			return false
		}
		return true
	})
	if !ok {
		return line{}, false
	}
	return l, true
}

// flatFields walks {"k":"v",...} with plain ASCII strings, no escapes and
// no whitespace, calling field for each pair in order; it is false for
// anything else, or as soon as field is.
func flatFields(b []byte, field func(key, val []byte) bool) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	for b = b[1 : len(b)-1]; len(b) > 0; {
		key, rest, ok := plainString(b)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return false
		}
		var val []byte
		if val, b, ok = plainString(rest[1:]); !ok {
			return false
		}
		if len(b) > 0 {
			if b[0] != ',' || len(b) == 1 {
				return false
			}
			b = b[1:]
		}
		if !field(key, val) {
			return false
		}
	}
	return true
}

// plainString reads a JSON string at the start of b holding only
// printable ASCII other than '\\' and '"'; it returns its contents and
// the rest of b.
func plainString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return nil, nil, false
	}
	s = b[1 : 1+end]
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, nil, false
		}
	}
	return s, b[2+end:], true
}

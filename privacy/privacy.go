// Package privacy encrypts personal data inside events with the data key of
// the person it belongs to (crypto-shredding, ARCHITECTURE.md invariant 10).
//
// Store decorates an events.Store. On Append it replaces the value at each
// personal path of the event's type (catalog.PersonalFields, the single list
// of what is personal) with an envelope
//
//	{"$enc":"<data key id>:<base64(nonce || AES-256-GCM ciphertext)>"}
//
// whose plaintext is the value's exact JSON text and whose associated data is
// the event id and the path, so an envelope cannot be moved to another event
// or field. Ids, amounts, statuses and times stay in clear. Every other byte
// of the event is kept as it was, and every read path (ReadStream, ReadAll,
// SubscribeAll) puts the exact original text back, so decrypted events are
// byte for byte what was appended (report raw_data included). A null value
// is left as it is: it says nothing.
//
// Erased marker: once the subject's key is destroyed, each envelope of theirs
// reads as JSON null, which the catalog's structs decode as the zero value
// ("" for a required string), so projections, commands and replays still
// work and yield the erased state. A personal value appended for a subject
// whose key is already destroyed is written as null.
//
// Subjects (datakeys.Keys names them): "user-<open_user_id>" for every event on a
// user's stream, for reports (open_user_id), plugin measurements bound to a
// platform user, orders with a user_id, and webhook bodies about a user.
// Personal data that belongs to no channel user takes its aggregate as
// subject: the order stream for a receiver without user_id, the card stream
// for a card holder, the plugin session stream for a plugin profile, the
// provider stream for a provider's contact; a webhook body takes its source
// event's subject. A stream name that is not a valid subject name is hashed.
package privacy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/jsoncodec"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
)

const (
	envPrefix = `{"$enc":"`
	envSuffix = `"}`
)

// Erased is what a field sealed with a destroyed key reads as.
var Erased = []byte("null")

// Store is an events.Store that keeps personal fields encrypted in the store
// beneath it and shows them decrypted to its callers.
type Store struct {
	inner  events.Store
	keys   *datakeys.Keys
	opened *openedCache
}

// New decorates inner; keys holds the data keys.
func New(inner events.Store, ks *datakeys.Keys) *Store {
	return &Store{inner: inner, keys: ks, opened: newOpenedCache()}
}

// Inner is the undecorated store, whose events hold ciphertext: the relay
// reads it, so the Kafka topics never carry personal data in clear.
func (s *Store) Inner() events.Store { return s.inner }

// Append encrypts each event's personal fields, then appends.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	sealed := make([]events.Proposed, len(evs))
	for i, ev := range evs {
		data, err := s.sealAppended(ctx, stream, ev)
		if err != nil {
			return events.AppendResult{}, err
		}
		ev.Data = data
		sealed[i] = ev
	}
	return s.inner.Append(ctx, stream, expected, sealed...)
}

// AppendMulti encrypts each part's personal fields, then appends the parts
// atomically (events.ErrMultiStreamUnsupported if the inner store cannot).
func (s *Store) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	if _, ok := s.inner.(events.MultiStreamAppender); !ok {
		return nil, events.ErrMultiStreamUnsupported
	}
	sealed := make([]events.StreamAppend, len(parts))
	n := 0
	for _, part := range parts {
		n += len(part.Events)
	}
	evs := make([]events.Proposed, n) // every part's, in one allocation
	for i, part := range parts {
		sealed[i] = part
		sealed[i].Events, evs = evs[:len(part.Events):len(part.Events)], evs[len(part.Events):]
		for j, ev := range part.Events {
			data, err := s.sealAppended(ctx, part.Stream, ev)
			if err != nil {
				return nil, err
			}
			ev.Data = data
			sealed[i].Events[j] = ev
		}
	}
	return events.AppendMulti(ctx, s.inner, sealed...)
}

// ReadStream reads and decrypts.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	recs, err := s.inner.ReadStream(ctx, stream, from, limit)
	if err != nil {
		return nil, err
	}
	return s.openAll(ctx, recs)
}

// ReadAll reads and decrypts.
func (s *Store) ReadAll(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
	recs, err := s.inner.ReadAll(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return s.openAll(ctx, recs)
}

// ReadPositions reads the events at positions in one pass of the inner
// store (events.ReadPositions) and opens them; where the key store reads
// many keys at once, the keys of them all are read in one round trip at
// the first one not cached, as a page of a replay reads its own.
func (s *Store) ReadPositions(ctx context.Context, positions []events.Position) ([]events.Recorded, error) {
	recs, err := events.ReadPositions(ctx, s.inner, positions)
	if err != nil {
		return nil, err
	}
	if s.keys.CanPrefetch() {
		for i, rec := range recs {
			if id := keyID(rec.Data); id != nil && !s.keys.CachedID(id) {
				s.prefetch(ctx, &pageAhead{buffered: recs[i+1:]}, rec)
				break
			}
		}
	}
	for i := range recs {
		if recs[i].Position.IsZero() {
			continue // no event there
		}
		if recs[i], err = s.Open(ctx, recs[i]); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// Head is the inner store's head.
func (s *Store) Head(ctx context.Context) (events.Position, error) { return s.inner.Head(ctx) }

// SubscribeAll subscribes and decrypts each event it delivers.
func (s *Store) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	sub, err := s.inner.SubscribeAll(ctx, after)
	if err != nil {
		return nil, err
	}
	return s.wrap(sub, nil, events.Position{}), nil
}

// SubscribeAllFor is SubscribeAll that decrypts only the events whose type
// wants accepts and delivers the others as stored: a follower that skips
// most of the log (a projection of one read model, the app directory) then pays
// no decryption for what it skips, which is most of a start's replay; an
// inner store that can skip such stretches unread (events.FilteredSubscriber)
// is asked to.
func (s *Store) SubscribeAllFor(ctx context.Context, after events.Position, wants func(eventType string) bool) (events.Subscription, error) {
	sub, err := events.SubscribeAllFor(ctx, s.inner, after, wants)
	if err != nil {
		return nil, err
	}
	return s.wrap(sub, wants, events.Position{}), nil
}

// wrap decrypts what sub delivers (only the events wants accepts, unless
// nil; those up to uncachedThrough without the opened-events cache), and
// can be polled when sub can.
func (s *Store) wrap(sub events.Subscription, wants func(eventType string) bool, uncachedThrough events.Position) events.Subscription {
	w := &subscription{Subscription: sub, s: s, wants: wants, uncachedThrough: uncachedThrough}
	if p, ok := sub.(events.Poller); ok {
		return polling{subscription: w, inner: p}
	}
	return w
}

// SubscribeReplay is SubscribeAllFor for a follower that replays the log
// up to through on its own (a read model rebuilt or catching up at a
// start): the events up to through are opened without the opened-events
// cache, since the node's other followers read that stretch before or
// will not read it (a rebuild's read models each want their own sealed
// types), so keeping their plaintext would only cost a lookup, an insert
// and an eviction per event, and the collector the bytes it held. The
// events after through are opened as SubscribeAllFor opens them.
func (s *Store) SubscribeReplay(ctx context.Context, after, through events.Position, wants func(eventType string) bool) (events.Subscription, error) {
	sub, err := events.SubscribeAllFor(ctx, s.inner, after, wants)
	if err != nil {
		return nil, err
	}
	return s.wrap(sub, wants, through), nil
}

// SubscribeSealed is SubscribeAllFor for a reader that hands the events
// on as stored, for others to open (OpenReplayed: a rebuild's shared
// reader): it reads only the types wants accepts and opens none. Where the
// key store reads many keys at once, the keys of the page the subscription
// holds are read at the first event whose key is not cached, as a
// subscription that opens reads them (pageAhead), so that those opening
// the events find them cached instead of reading a round trip per person
// for batches of a few events.
func (s *Store) SubscribeSealed(ctx context.Context, after events.Position, wants func(eventType string) bool) (events.Subscription, error) {
	sub, err := events.SubscribeAllFor(ctx, s.inner, after, wants)
	if err != nil || !s.keys.CanPrefetch() {
		return sub, err
	}
	return &prefetching{Subscription: sub, s: s, wants: wants}, nil
}

// prefetching is a subscription of events as stored that reads the keys of
// its page ahead (SubscribeSealed).
type prefetching struct {
	events.Subscription
	s     *Store
	wants func(eventType string) bool
	ahead pageAhead
}

func (sub *prefetching) Next(ctx context.Context) (events.Recorded, error) {
	rec, err := sub.Subscription.Next(ctx)
	if err != nil {
		return rec, err
	}
	if id := keyID(rec.Data); id != nil && !sub.s.keys.CachedID(id) {
		if b, ok := sub.Subscription.(interface{ Buffered() []events.Recorded }); ok {
			sub.ahead.buffered, sub.ahead.wants = b.Buffered(), sub.wants
			sub.s.prefetch(ctx, &sub.ahead, rec)
		}
	}
	return rec, nil
}

// keyID is the id of the key data's envelopes are sealed with (nil for
// data without one): every field of an event is sealed with its subject's
// one key, and an envelope's opening cannot occur unescaped inside a JSON
// string, so the first one names the event's key.
func keyID(data []byte) []byte {
	at := bytes.Index(data, []byte(envPrefix))
	if at < 0 {
		return nil
	}
	env := data[at+len(envPrefix):]
	if colon := bytes.IndexByte(env, ':'); colon > 0 {
		return env[:colon:colon]
	}
	return nil
}

// OpenReplayed opens page in place: events the inner store delivered as
// stored to a replay of the log up to its head (a rebuild's shared reader
// reads them so, and each read model opens its own on its own goroutine,
// which spreads decryption over the cores). Like SubscribeReplay's
// stretch, they are opened without the opened-events cache; at the first
// key not cached, the keys of page's events after it are read with it in
// one round trip, as a subscription reads those of the page it holds.
// Page holds only events the caller wants opened.
func (s *Store) OpenReplayed(ctx context.Context, page []events.Recorded) error {
	var pa *pageAhead
	if s.keys.CanPrefetch() {
		pa = &pageAhead{}
	}
	for i := range page {
		if pa != nil {
			pa.buffered = page[i+1:]
		}
		rec, err := s.open1(ctx, page[i], uncached, pa)
		if err != nil {
			return err
		}
		page[i] = rec
	}
	return nil
}

// Close closes the inner store (and, under internal/sharedguard, checks
// that no subscriber wrote into the plaintext it shared).
func (s *Store) Close() error {
	s.opened.drop()
	return s.inner.Close()
}

type subscription struct {
	events.Subscription
	s     *Store
	wants func(eventType string) bool // nil: every event
	// ahead is the page the subscription holds past the event it opens:
	// its keys are loaded together at the first one not cached.
	ahead pageAhead
	// uncachedThrough is the end of the stretch opened without the
	// opened-events cache (SubscribeReplay); zero for none.
	uncachedThrough events.Position
}

// polling is a subscription over an events.Poller, itself one.
type polling struct {
	*subscription
	inner events.Poller
}

// Buffered is what the inner subscription holds past the event it last
// handed out, as stored (empty when it cannot say).
func (sub polling) Buffered() []events.Recorded {
	if b, ok := sub.inner.(interface{ Buffered() []events.Recorded }); ok {
		return b.Buffered()
	}
	return nil
}

func (sub polling) TryNext(ctx context.Context) (events.Recorded, <-chan struct{}, error) {
	rec, wake, err := sub.inner.TryNext(ctx)
	if err != nil || wake != nil {
		return rec, wake, err
	}
	rec, err = sub.open(ctx, rec)
	return rec, nil, err
}

func (sub *subscription) Next(ctx context.Context) (events.Recorded, error) {
	rec, err := sub.Subscription.Next(ctx)
	if err != nil {
		return rec, err
	}
	return sub.open(ctx, rec)
}

// open decrypts rec, unless wants leaves it as stored.
func (sub *subscription) open(ctx context.Context, rec events.Recorded) (events.Recorded, error) {
	if sub.wants != nil && !sub.wants(rec.Type) {
		return rec, nil
	}
	var pa *pageAhead
	if b, ok := sub.Subscription.(interface{ Buffered() []events.Recorded }); ok && sub.s.keys.CanPrefetch() {
		pa = &sub.ahead
		pa.buffered, pa.wants = b.Buffered(), sub.wants
	}
	mode := sharedCached
	if !sub.uncachedThrough.Less(rec.Position) {
		mode = uncached
	}
	return sub.s.open1(ctx, rec, mode, pa)
}

// pageAhead is what a subscription has read past the event it opens.
// Where each key is read from the backend on its own (Postgres), a replay
// meeting people for the first time read one key per person, a round
// trip each; at the first key not cached, the keys of every event the
// page still holds are read in one round trip (datakeys.Keys.Prefetch),
// once per stretch of the log.
type pageAhead struct {
	buffered []events.Recorded
	wants    func(eventType string) bool
	// done is the last position whose keys were asked for.
	done events.Position
}

// prefetch asks for the keys of the events in the buffer that have not
// been asked for yet, and of the one being opened (data).
func (s *Store) prefetch(ctx context.Context, pa *pageAhead, rec events.Recorded) {
	if !pa.done.Less(rec.Position) {
		return // this stretch was asked for: the key is not to be had
	}
	sc := scratches.Get().(*locateScratch)
	defer scratches.Put(sc)
	var ids [][]byte
	add := func(r events.Recorded) {
		if !bytes.Contains(r.Data, []byte(envPrefix)) {
			return
		}
		found, err := locateInto(sc, r.Data, personal(r.Type))
		if err != nil {
			return
		}
		for _, f := range found {
			val := r.Data[f.start:f.end]
			if !bytes.HasPrefix(val, []byte(envPrefix)) || !bytes.HasSuffix(val, []byte(envSuffix)) {
				continue
			}
			env := val[len(envPrefix) : len(val)-len(envSuffix)]
			if colon := bytes.IndexByte(env, ':'); colon > 0 {
				ids = append(ids, env[:colon:colon])
				break // an event's fields share its subject's key
			}
		}
	}
	add(rec)
	pa.done = rec.Position
	for _, r := range pa.buffered {
		if pa.wants == nil || pa.wants(r.Type) {
			add(r)
		}
		pa.done = r.Position
	}
	s.keys.Prefetch(ctx, ids)
}

func (s *Store) openAll(ctx context.Context, recs []events.Recorded) ([]events.Recorded, error) {
	for i := range recs {
		var err error
		if recs[i], err = s.Open(ctx, recs[i]); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// Seal returns data with the value at each personal path of eventType
// encrypted; data of a type the catalog does not list is encrypted whole.
func (s *Store) Seal(ctx context.Context, stream, eventID, eventType string, data []byte) ([]byte, error) {
	out, _, err := s.seal(ctx, stream, eventID, eventType, data)
	return out, err
}

// sealAppended is Seal for an event about to be appended: when it sealed
// fields with a readable key, the plaintext is kept (openedCache.expect)
// for the first read of the stored event, so the followers the commit
// wakes do not locate and decrypt again what this process just encrypted.
// The epoch is read before the data key: a key forgotten or destroyed from
// then on moves it, and the kept plaintext is never handed out.
func (s *Store) sealAppended(ctx context.Context, stream string, ev events.Proposed) ([]byte, error) {
	epoch := s.keys.Epoch()
	out, live, err := s.seal(ctx, stream, ev.ID, ev.Type, ev.Data)
	if err == nil && live {
		s.opened.expect(ev.ID, epoch, out, ev.Data)
	}
	return out, err
}

// seal is Seal; live reports that personal fields were sealed with a
// readable key (not written as null for a destroyed one).
func (s *Store) seal(ctx context.Context, stream, eventID, eventType string, data []byte) (out []byte, live bool, err error) {
	fields := personal(eventType)
	if fields.listed && len(fields.paths) == 0 || len(data) == 0 {
		return data, false, nil
	}
	sc := scratches.Get().(*locateScratch)
	defer scratches.Put(sc)
	found, err := locateInto(sc, data, fields)
	if err != nil {
		return nil, false, fmt.Errorf("privacy: %s: %w", eventType, err)
	}
	if len(found) == 0 {
		return data, false, nil
	}
	subject := Subject(stream, eventType, data)
	key, err := s.keys.DataKey(ctx, subject)
	destroyed := errors.Is(err, datakeys.ErrDestroyed)
	if err != nil && !destroyed {
		return nil, false, fmt.Errorf("privacy: data key: %w", err)
	}
	if destroyed {
		out = make([]byte, 0, len(data))
		last := 0
		for _, f := range found {
			out = append(append(out, data[last:f.start]...), Erased...)
			last = f.end
		}
		return append(out, data[last:]...), false, nil
	}
	size, longest, deepest := len(data), 0, 0
	for _, f := range found {
		size += len(envPrefix) + len(key.ID) + 1 + base64.StdEncoding.EncodedLen(f.end-f.start+32) + len(envSuffix)
		longest = max(longest, f.end-f.start)
		deepest = max(deepest, len(f.path))
	}
	// One scratch for every field, the pooled one's: the nonces (one read
	// for all of them), room for the longest field's nonce || ciphertext,
	// and its associated data; each part capped so that no append runs
	// into the next. Nothing of it is left in out.
	n := key.AEAD.NonceSize()
	nonces := n * len(found)
	room := n + longest + key.AEAD.Overhead()
	sc.sealed = slices.Grow(sc.sealed[:0], nonces+room+len(eventID)+1+deepest)
	scratch := sc.sealed[:nonces+room+len(eventID)+1+deepest]
	if _, err := rand.Read(scratch[:nonces]); err != nil {
		return nil, false, err
	}
	sealed := scratch[nonces : nonces : nonces+room]
	ad := append(scratch[nonces+room:nonces+room], eventID...)
	ad = append(ad, 0)
	out = make([]byte, 0, size)
	last := 0
	for i, f := range found {
		out = append(out, data[last:f.start]...)
		last = f.end
		nonce := scratch[i*n : (i+1)*n]
		ad = append(ad[:len(eventID)+1], f.path...) // associated data: eventID, NUL, f.path
		sealed = key.AEAD.Seal(append(sealed[:0], nonce...), nonce, data[f.start:f.end], ad)
		out = append(out, envPrefix...)
		out = append(out, key.ID...)
		out = append(out, ':')
		out = base64.StdEncoding.AppendEncode(out, sealed)
		out = append(out, envSuffix...)
	}
	return append(out, data[last:]...), true, nil
}

// Open returns rec with its personal fields decrypted (or erased); events
// without envelopes come back untouched.
func (s *Store) Open(ctx context.Context, rec events.Recorded) (events.Recorded, error) {
	return s.open1(ctx, rec, copyCached, nil)
}

// caching is how open1 uses the opened-events cache.
type caching uint8

const (
	// copyCached looks the event up and keeps it, handing out a copy.
	copyCached caching = iota
	// sharedCached, for subscriptions (whose consumers only read the
	// bytes, see events.Subscription), hands out the cached plaintext
	// itself, so each event is decrypted once and copied never for all
	// the node's followers.
	sharedCached
	// uncached neither looks the event up nor keeps it (SubscribeReplay).
	uncached
)

// open1 is Open, using the cache as mode says. The cache's bounds and its
// emptying on every key erasure hold in every mode.
func (s *Store) open1(ctx context.Context, rec events.Recorded, mode caching, pa *pageAhead) (events.Recorded, error) {
	if !bytes.Contains(rec.Data, []byte(envPrefix)) {
		return rec, nil
	}
	epoch := s.keys.Epoch()
	if mode != uncached {
		if data, ok := s.opened.get(rec, epoch, mode == sharedCached); ok {
			rec.Data = data
			return rec, nil
		}
	}
	sc := scratches.Get().(*locateScratch)
	defer scratches.Put(sc)
	found, err := locateInto(sc, rec.Data, personal(rec.Type))
	if err != nil {
		return rec, fmt.Errorf("privacy: %s at %s: %w", rec.Type, rec.Position, err)
	}
	// out is made at the plaintext's length (at most two bytes over per
	// field: base64's padding), so it never grows and nothing of the
	// envelopes' size stays allocated with it; each field decrypts
	// straight into it, and op keeps the scratch and the last key looked
	// up across the event's fields.
	out := make([]byte, 0, plainBound(rec.Data, found))
	op := opener{ahead: pa, rec: rec, sc: sc}
	last := 0
	for _, f := range found {
		val := rec.Data[f.start:f.end]
		if !bytes.HasPrefix(val, []byte(envPrefix)) || !bytes.HasSuffix(val, []byte(envSuffix)) {
			continue // written before encryption, or null
		}
		out = append(out, rec.Data[last:f.start]...)
		if out, err = s.openInto(ctx, &op, out, val[len(envPrefix):len(val)-len(envSuffix)], rec.ID, f.path); err != nil {
			return rec, fmt.Errorf("privacy: %s %s at %s: %w", rec.Type, f.path, rec.Position, err)
		}
		last = f.end
	}
	out = append(out, rec.Data[last:]...)
	plain := out[:len(out):len(out)]
	if mode != uncached {
		s.opened.put(rec, epoch, plain, mode == sharedCached)
	}
	rec.Data = plain
	return rec, nil
}

// opener is what one event's decryption reuses across its fields: the
// key of the previous envelope (every field of an event is sealed with its
// subject's one key).
type opener struct {
	keyID  []byte // in the event's data, which outlives the opener
	key    datakeys.Key
	erased bool // keyID's key is destroyed
	// ahead, when set, is the page read past the event (rec): a key not
	// cached loads the page's keys first (pageAhead).
	ahead *pageAhead
	rec   events.Recorded
	// sc lends its sealed buffer to each field's decoded envelope.
	sc *locateScratch
}

// maxPooledSealed bounds the decoding buffer a pooled scratch keeps: a
// larger field (a report's raw data) decodes into one of its own.
const maxPooledSealed = 64 << 10

// sealOverhead is what sealing adds to a value besides the envelope's
// text: AES-GCM's nonce and tag (datakeys' keys).
const sealOverhead = 12 + 16

// plainBound is the length of data opened, or at most two bytes more per
// field (base64's padding): each envelope among found is replaced by its
// value, or by Erased, whichever is longer. A key of another overhead
// would only make out grow.
func plainBound(data []byte, found []located) int {
	n := len(data)
	for _, f := range found {
		val := data[f.start:f.end]
		if !bytes.HasPrefix(val, []byte(envPrefix)) || !bytes.HasSuffix(val, []byte(envSuffix)) {
			continue
		}
		env := val[len(envPrefix) : len(val)-len(envSuffix)]
		b64 := env[bytes.IndexByte(env, ':')+1:]
		value := max(base64.StdEncoding.DecodedLen(len(b64))-sealOverhead, len(Erased))
		n += value - len(val)
	}
	return max(n, 0)
}

// openInto appends the plaintext of env (an envelope's "keyID:base64")
// sealed for eventID's field at path to out: Erased once the key is
// destroyed. It decodes into the opener's pooled buffer and decrypts from
// there into out, so a field costs no allocation of its own.
func (s *Store) openInto(ctx context.Context, op *opener, out, env []byte, eventID, path string) ([]byte, error) {
	colon := bytes.IndexByte(env, ':')
	if colon < 0 {
		return out, errors.New("malformed envelope")
	}
	if op.keyID == nil || !bytes.Equal(env[:colon], op.keyID) {
		keyID := env[:colon:colon]
		if op.ahead != nil && !s.keys.CachedID(keyID) {
			s.prefetch(ctx, op.ahead, op.rec)
		}
		key, err := s.keys.ByIDBytes(ctx, keyID)
		erased := errors.Is(err, datakeys.ErrNotFound)
		if err != nil && !erased {
			return out, err
		}
		op.keyID, op.key, op.erased = keyID, key, erased
	}
	if op.erased {
		return append(out, Erased...), nil
	}
	// sealed is nonce || ciphertext, followed in the same buffer by the
	// associated data; the plaintext is appended to out.
	b64 := env[colon+1:]
	buf := op.sc.sealed[:0]
	if need := base64.StdEncoding.DecodedLen(len(b64)) + len(eventID) + 1 + len(path); cap(buf) < need {
		buf = make([]byte, 0, need)
		if need <= maxPooledSealed {
			op.sc.sealed = buf
		}
	}
	sealed, err := appendDecode64(buf, b64)
	n := op.key.AEAD.NonceSize()
	if err != nil || len(sealed) < n {
		return out, errors.New("malformed envelope")
	}
	ad := append(sealed[len(sealed):], eventID...) // associated data: eventID, NUL, path
	ad = append(append(ad, 0), path...)
	out, err = op.key.AEAD.Open(out, sealed[:n], sealed[n:], ad)
	if err != nil {
		return out, errors.New("envelope does not authenticate (tampered, or moved from another event or field)")
	}
	return out, nil
}

type located struct {
	span
	path string
}

// personalPaths is an event type's personal paths (catalog.PersonalFields)
// compiled for locate.
type personalPaths struct {
	paths  []string
	listed bool
	tree   *pathNode
}

// compiled caches each event type's compiled paths (the catalog's lists
// never change while the process runs).
var compiled sync.Map // event type -> *personalPaths

// personal returns the event type's compiled personal paths.
func personal(eventType string) *personalPaths {
	if v, ok := compiled.Load(eventType); ok {
		return v.(*personalPaths)
	}
	paths, listed := catalog.PersonalFields(eventType)
	p := &personalPaths{paths: paths, listed: listed, tree: compilePaths(paths)}
	compiled.Store(eventType, p)
	return p
}

// locate finds the non-null values at the type's personal paths, in
// document order, in one pass; an unlisted type's whole document is one
// value (path ""). Every seal comes through here: it allocates the spans
// once, sized for one value per path, and the result once.
func locate(data []byte, fields *personalPaths) ([]located, error) {
	return locateInto(&locateScratch{}, data, fields)
}

// locateScratch is what locateInto reuses across documents: the spans
// found and the located values (offsets, and paths that are the
// catalog's, kept for the process's life), and the room seal and openInto
// work in. A pooled scratch holds no plaintext of an event: at most an
// event's id, nonces and ciphertext.
type locateScratch struct {
	spans []pathSpan
	found []located
	// sealed holds one field's decoded envelope and associated data
	// while it is opened (openInto), or a seal's nonces, one field's
	// nonce || ciphertext and associated data (seal).
	sealed []byte
}

// scratches lend opening and sealing their locateScratch: a replay opens
// every sealed event of the log and each append seals its events, and the
// scratch's slices would be allocations per event.
var scratches = sync.Pool{New: func() any { return &locateScratch{} }}

// locateInto is locate into sc's buffers: the result is valid until sc's
// next use.
func locateInto(sc *locateScratch, data []byte, fields *personalPaths) ([]located, error) {
	if !fields.listed {
		start := jsoncodec.SkipSpace(data, 0)
		end, err := skipValue(data, start)
		if err != nil {
			return nil, err
		}
		return append(sc.found[:0], located{span{start, end}, ""}), nil
	}
	spans, err := findAllInto(sc.spans, data, fields.tree, len(fields.paths))
	if err != nil {
		return nil, err
	}
	if cap(spans) > cap(sc.spans) {
		sc.spans = spans[:0]
	}
	if sc.found == nil || cap(sc.found) < len(spans) {
		sc.found = make([]located, 0, len(spans))
	}
	found := sc.found[:0]
	for _, sp := range spans {
		if string(data[sp.start:sp.end]) != "null" {
			found = append(found, located{sp.span, fields.paths[sp.path]})
		}
	}
	byStart := func(a, b located) int { return a.start - b.start }
	if !slices.IsSortedFunc(found, byStart) {
		slices.SortFunc(found, byStart)
	}
	return found, nil
}

// Subject names the person (or, for personal data of no channel user, the
// aggregate) whose key seals an event's personal fields; see the package doc.
// It reads the few fields it needs with jsoncodec.Pick, and with
// encoding/json (subjectJSON) whenever that reader cannot decide exactly.
func Subject(stream, eventType string, data []byte) string {
	if strings.HasPrefix(stream, "user-") {
		return stream
	}
	if subject, ok := subjectDirect(stream, eventType, data); ok {
		return subject
	}
	return subjectJSON(stream, eventType, data)
}

// subjectFields are the members Subject reads, in subjectJSON's struct
// order.
var subjectFields = []jsoncodec.Field{
	{Name: "open_user_id", Kind: jsoncodec.Int64},
	{Name: "user_id", Kind: jsoncodec.Int64},
	{Name: "platform_user_id", Kind: jsoncodec.Int64},
	{Name: "source_stream", Kind: jsoncodec.String},
	{Name: "body", Kind: jsoncodec.String},
	{Name: "event", Kind: jsoncodec.String},
}

// erasedEvent is the webhook that tells an app a person was erased: its
// delivery is created after the person's key is destroyed and carries no
// personal data, so it is sealed under the delivery's own stream (sealed
// under the person's key it would be written as null and never be sent).
var erasedEvent = (catalog.UserErased{}).EventType()

// bodyFields is the one member a webhook body names its user with.
var bodyFields = []jsoncodec.Field{{Name: "open_user_id", Kind: jsoncodec.Int64}}

// isDelivery reports the event types whose subject may come from a webhook
// body or its source stream.
func isDelivery(eventType string) bool {
	return eventType == (catalog.DeliveryCreated{}).EventType() || eventType == (catalog.DeliveryAttempted{}).EventType()
}

// subjectDirect is subjectJSON without reflection; false when jsoncodec.Pick
// declines the data or a delivery's body.
func subjectDirect(stream, eventType string, data []byte) (string, bool) {
	var ids [6]jsoncodec.Picked
	if !jsoncodec.Pick(data, subjectFields, ids[:]) {
		return "", false
	}
	for _, id := range ids[:3] {
		if id.N > 0 {
			return "user-" + strconv.FormatInt(id.N, 10), true
		}
	}
	if !isDelivery(eventType) {
		return streamSubject(stream), true
	}
	if ev := ids[5].Raw(data); len(ev) > 2 {
		var arr [64]byte
		if string(jsoncodec.Unquote(arr[:0], ev)) == erasedEvent {
			return streamSubject(stream), true
		}
	}
	if body := ids[4].Raw(data); len(body) > 2 { // "" names nobody
		var arr [1024]byte
		user, ok := BodyUser(jsoncodec.Unquote(arr[:0], body))
		if !ok {
			return "", false
		}
		if user > 0 {
			return "user-" + strconv.FormatInt(user, 10), true
		}
	}
	if src := ids[3].Raw(data); len(src) > 2 {
		var arr [128]byte
		return streamSubject(string(jsoncodec.Unquote(arr[:0], src))), true
	}
	return streamSubject(stream), true
}

// BodyUser is the open_user_id a webhook body names (0 for none), as
//
//	json.Unmarshal(body, &struct{ OpenUserID *int64 `json:"open_user_id"` }{})
//
// gives it (0 too when that returns an error); false when the direct reader
// declines the body and the caller must decode it with encoding/json.
func BodyUser(body []byte) (int64, bool) {
	var user [1]jsoncodec.Picked
	if !jsoncodec.Pick(body, bodyFields, user[:]) {
		return 0, false
	}
	if user[0].Mismatch {
		return 0, true
	}
	return user[0].N, true
}

// subjectJSON is Subject decoded with encoding/json: the reference the
// direct reader must always agree with, and its fallback.
func subjectJSON(stream, eventType string, data []byte) string {
	var ids struct {
		OpenUserID     *int64 `json:"open_user_id"`
		UserID         *int64 `json:"user_id"`
		PlatformUserID *int64 `json:"platform_user_id"`
		SourceStream   string `json:"source_stream"`
		Body           string `json:"body"`
		Event          string `json:"event"`
	}
	_ = json.Unmarshal(data, &ids)
	for _, id := range []*int64{ids.OpenUserID, ids.UserID, ids.PlatformUserID} {
		if id != nil && *id > 0 {
			return "user-" + strconv.FormatInt(*id, 10)
		}
	}
	if isDelivery(eventType) && ids.Event == erasedEvent {
		return streamSubject(stream)
	}
	if isDelivery(eventType) {
		if ids.Body != "" {
			var body struct {
				OpenUserID *int64 `json:"open_user_id"`
			}
			if json.Unmarshal([]byte(ids.Body), &body) == nil && body.OpenUserID != nil && *body.OpenUserID > 0 {
				return "user-" + strconv.FormatInt(*body.OpenUserID, 10)
			}
		}
		if ids.SourceStream != "" {
			return streamSubject(ids.SourceStream)
		}
	}
	return streamSubject(stream)
}

func streamSubject(stream string) string {
	if strings.HasPrefix(stream, "user-") || datakeys.ValidSubject(stream) {
		return stream
	}
	sum := sha256.Sum256([]byte(stream))
	return "stream-" + hex.EncodeToString(sum[:16])
}

// Decrypting wraps a stage of webhook creation that takes a batch of events
// (the dispatcher's PrepareBatch) so that it sees them decrypted: the
// internal Kafka topic carries events as stored (encrypted), and the
// dispatcher renders webhooks from plaintext. Decryption then runs in the
// preparing stage of a pipelined source, beside the previous batch's commit.
func Decrypting[P any](s *Store, stage func(context.Context, []events.Recorded) (P, error)) func(context.Context, []events.Recorded) (P, error) {
	return func(ctx context.Context, evs []events.Recorded) (P, error) {
		for i := range evs {
			ev, err := s.Open(ctx, evs[i])
			if err != nil {
				var zero P
				return zero, err
			}
			evs[i] = ev
		}
		return stage(ctx, evs)
	}
}

// Blank replaces every envelope at a personal path with null, without any
// key: the analytics feed, which publishes no personal field, decodes stored
// (encrypted) events this way.
func Blank(eventType string, data []byte) []byte {
	if !bytes.Contains(data, []byte(envPrefix)) {
		return data
	}
	found, err := locate(data, personal(eventType))
	if err != nil {
		return data
	}
	var out bytes.Buffer
	last := 0
	for _, f := range found {
		if val := data[f.start:f.end]; bytes.HasPrefix(val, []byte(envPrefix)) && bytes.HasSuffix(val, []byte(envSuffix)) {
			out.Write(data[last:f.start])
			out.Write(Erased)
			last = f.end
		}
	}
	out.Write(data[last:])
	return out.Bytes()
}

// DropOpened empties the cache of decrypted events. An erasure on this
// node (or one this node's follower saw) empties it already; the node also
// calls this periodically, so the data of a person whose key another node
// destroyed without this node learning of it (that node died before
// appending user.erased) stays at most one sweep interval.
func (s *Store) DropOpened() { s.opened.drop() }

// Readable reports whether the personal fields sealed for subject read back
// as written right now: false once the subject's key is destroyed (here, or
// on another node once this process's key cache has forgotten it) or never
// existed, so a cache of decoded states keeps no plaintext of an erased
// person. It asks the key cache first, the key store only on a miss.
func (s *Store) Readable(ctx context.Context, subject string) bool {
	_, err := s.keys.Lookup(ctx, subject)
	return err == nil
}

package webhooks

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// candidate is a delivery the sender may attempt and has not claimed yet:
// found due in the read model, or handed over by this node's creation.
type candidate struct {
	id  string
	key endpointKey
	// pre is the claim creation took for this node's sender, if any.
	pre *preClaimed
}

// preClaimed is a delivery that its creation's append claimed
// (AppendClaims), with what the sender attempts it from: the delivery as
// created, the stream's only event until an attempt or a resend appends,
// and the key subject its body is sealed with.
type preClaimed struct {
	claim   Claim
	at      time.Time // before the append that claimed it
	del     *delivery
	subject string
}

// claimed is a claim the sender holds with the endpoint slot it reserved.
type claimed struct {
	Claim
	ep    endpointKey
	url   string
	probe bool
	// stream is the delivery's stream read with the claim (LoadingClaims),
	// nil when the attempt reads it.
	stream *loadedStream
	// pre is set when creation took the claim (the attempt's budget counts
	// from pre.at, and it starts from pre.del).
	pre *preClaimed
}

const (
	// maxDueScan bounds how many due rows one scan of the read model reads
	// to get past the ones the sender already holds or has queued.
	maxDueScan = 4096
	// maxQueued bounds the candidates the sender keeps; beyond it, due
	// deliveries stay in the read model until the queue drains.
	maxQueued = 8192
	// maxHandover bounds deliveries handed over by creation and not yet
	// taken by the sender (beyond it they are found by a scan instead).
	maxHandover = 8192
	// scanEvery spaces the scans prompted only by the deliveries
	// projection moving (deliveries created by another node, resends):
	// this node's new deliveries are handed over, and a scan per projected
	// batch re-read the head of the queue hundreds of times a second.
	scanEvery = 25 * time.Millisecond
	// idleRescan is how long the sender sleeps, when its last scan found
	// nothing due, before it scans again anyway (its safety net: what
	// falls due wakes it earlier).
	idleRescan = 30 * time.Second
	// refillBatch is how many candidates a scan for a backlog in the read
	// model takes at once: each scan walks the rows the sender already
	// holds at the head of the due order, so it should serve many slots.
	refillBatch = 512
)

// sendQueue is the sender's own queue of candidates, in the order found:
// the read model's due order, then deliveries as this node created them.
// Slots that free up take from it without reading the read model again.
type sendQueue struct {
	items  []candidate
	has    map[string]bool
	perApp map[int64]int
	perKey map[endpointKey]int
}

func newSendQueue() *sendQueue {
	return &sendQueue{has: map[string]bool{}, perApp: map[int64]int{}, perKey: map[endpointKey]int{}}
}

// add queues c unless it is queued already or the queue is full.
func (q *sendQueue) add(c candidate) bool {
	if q.has[c.id] || len(q.items) >= maxQueued {
		return false
	}
	q.items = append(q.items, c)
	q.has[c.id] = true
	q.perApp[c.key.app]++
	q.perKey[c.key]++
	return true
}

// remove drops the candidates at the given indexes (ascending). The kept
// candidates before the last of them move back over the gaps and the
// queue then starts after them, so a removal costs about the stretch a
// claim pass walked from the head, not the length of the backlog behind.
func (q *sendQueue) remove(at []int) {
	if len(at) == 0 {
		return
	}
	for _, i := range at {
		c := q.items[i]
		delete(q.has, c.id)
		if q.perApp[c.key.app]--; q.perApp[c.key.app] <= 0 {
			delete(q.perApp, c.key.app)
		}
		if q.perKey[c.key]--; q.perKey[c.key] <= 0 {
			delete(q.perKey, c.key)
		}
	}
	w, next := at[len(at)-1], len(at)-1
	for r := w; r >= 0; r-- {
		if next >= 0 && at[next] == r {
			next--
			continue
		}
		q.items[w] = q.items[r]
		w--
	}
	clear(q.items[:w+1])
	q.items = q.items[w+1:]
}

// handover is the mailbox through which creation hands deliveries to send
// to this node's sender.
type handover struct {
	mu    sync.Mutex
	on    bool // a sender runs on this node
	items []candidate
	wake  chan struct{}
	// remember: the sender learns creations from the batches the
	// deliveries projection applies here (appliedHere), so those handed
	// over are remembered (Dispatcher.handed) to tell them apart.
	remember bool
}

func (h *handover) init() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.wake == nil {
		h.wake = make(chan struct{}, 1)
	}
}

// open opens the mailbox to creation while a sender runs (closeHandover
// closes it); remember says whether to remember what is handed over.
func (h *handover) open(remember bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on, h.remember = true, remember
}

// closeHandover closes the mailbox, empties it and releases the claims
// creation took for deliveries still in it or queued: no attempt of this
// sender will use them.
func (s *sendLoop) closeHandover() {
	h := &s.d.handover
	h.mu.Lock()
	h.on = false
	items := h.items
	h.items = nil
	h.mu.Unlock()
	var cs []Claim
	for _, c := range append(items, s.q.items...) {
		if c.pre != nil {
			cs = append(cs, c.pre.claim)
		}
	}
	if len(cs) > 0 {
		s.d.release(s.ctx, cs)
	}
}

// wakeup is signalled when a delivery is handed over.
func (h *handover) wakeup() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake
}

// signal makes the sender take a pass.
func (h *handover) signal() {
	h.mu.Lock()
	wake := h.wake
	h.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// handOver gives a just-recorded delivery to this node's sender, so its
// first attempt does not wait for the deliveries projection and a scan.
// A delivery not handed over (no sender here, mailbox full) is found by a
// scan as before; claims keep it to one attempt either way.
// A delivery creation claimed (pre) that is not handed over has its claim
// released.
func (d *Dispatcher) handOver(ctx context.Context, c catalog.DeliveryCreated, pre *preClaimed) {
	if !c.Deliver {
		return
	}
	h := &d.handover
	h.mu.Lock()
	if !h.on || len(h.items) >= maxHandover {
		h.mu.Unlock()
		if pre != nil {
			d.release(ctx, []Claim{pre.claim})
		}
		return
	}
	h.items = append(h.items, candidate{id: c.DeliveryID, key: endpointKey{app: c.AppID, endpoint: c.EndpointID}, pre: pre})
	remember := h.remember
	h.mu.Unlock()
	if remember {
		d.handed.add(c.DeliveryID)
	}
	h.signal()
}

// accepting says whether a sender runs here to take deliveries over.
func (h *handover) accepting() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.on
}

// takeHandedOver empties the mailbox into the queue, in order. A delivery
// creation claimed counts as held by this node's sender from here on (scans
// pass over it); one the queue does not take gives its claim back.
func (s *sendLoop) takeHandedOver() {
	d, h := s.d, &s.d.handover
	h.mu.Lock()
	items := h.items
	h.items = nil
	h.mu.Unlock()
	for _, c := range items {
		if c.pre != nil {
			d.setAttempting(c.id, true)
			if !s.q.add(c) {
				s.giveBack(c.pre)
			}
			continue
		}
		if !d.isAttempting(c.id) && !s.q.has[c.id] && !s.q.add(c) {
			s.scan = true // the queue is full: the read model holds it
		}
	}
}

// giveBack releases claims creation took that no attempt will use (rare:
// a full queue, a suspended app, an open breaker, a long wait behind a
// busy endpoint), at once, and has the sender scan again: their deliveries
// are due in the read model, where scans passed over them while held.
func (s *sendLoop) giveBack(pres ...*preClaimed) {
	if len(pres) == 0 {
		return
	}
	cs := make([]Claim, len(pres))
	for i, p := range pres {
		cs[i] = p.claim
	}
	s.d.release(s.ctx, cs)
	for _, c := range cs {
		s.d.setAttempting(c.DeliveryID, false)
	}
	s.scan = true
	s.wake()
}

// RunSender attempts due deliveries until ctx ends, at most Workers at once
// and at most PerEndpoint at once per app endpoint; an endpoint whose
// breaker is open is skipped until its probe is due. Each attempt runs
// under a claim (see Claims), so nodes sharing the deliveries take disjoint
// shares of the due work and never overlap two attempts of one delivery.
//
// The sender keeps a queue of candidates: deliveries this node creates are
// handed over the moment they are recorded; the read model is scanned at
// start, when the queue runs short while the read model had more, when
// retries fall due, when an app is resumed or a probe is due, at most
// every scanEvery when the deliveries projection moved (deliveries another
// node created, resends, retries scheduled; where the projection applies
// its batches on this node, only those batches that hold such news: see
// appliedHere), and at least every second while a delivery it did not
// take was due. A freed slot takes the next candidate of a free endpoint
// from the queue, in order.
func (d *Dispatcher) RunSender(ctx context.Context) error {
	if d.Claims == nil {
		return errors.New("webhooks: the sender needs Claims")
	}
	d.handover.init()
	// After a restart the delivery read model may catch up before the app
	// directory; an attempt then would not find the app's URL and secret
	// and would burn a retry. Start once the directory has caught up.
	if err := d.AppsReady.WaitReady(ctx); err != nil {
		return nil
	}
	s := d.newSendLoop(ctx)
	s.followApplies()
	d.handover.open(s.applied != nil)
	defer s.closeHandover()
	// Claims are released by one goroutine, as many per statement as
	// attempts ended while the previous release ran; it ends after the
	// last attempt's release.
	released := make(chan struct{})
	go d.releaseClaims(ctx, s.releases, released)
	defer func() { s.wg.Wait(); s.endGoroutines(); close(s.releases); <-released }()
	for {
		s.watch()
		if d.rescan.Swap(false) {
			s.scan = true // a delivery a scan passed over was released
		}
		if d.recheck.Swap(false) {
			s.dirty = true // a delivery it had in hand may still be due
		}
		now := d.Clock.Now()
		s.takeHandedOver()
		// Only this loop fills sem, so this many slots stay free below.
		free := s.workers - len(s.sem)
		held := s.refill(now, free) || len(s.suspended) > 0
		batch, claimedAt, h := s.claim(now, free)
		s.launch(batch, claimedAt)
		// Only a held delivery waits for the directory.
		if ctx.Err() != nil || !s.wait(now, held || h) {
			return nil
		}
	}
}

// sendLoop is RunSender's state between its passes.
type sendLoop struct {
	d         *Dispatcher
	ctx       context.Context
	eps       *breakers
	workers   int
	suspended map[int64]bool // apps found suspended: their deliveries are left out of the scans
	q         *sendQueue
	sem       chan struct{} // one per attempt holding a worker
	recording chan struct{} // Sole: one per attempt whose outcome is being written after its worker was given back
	kick      chan struct{} // a worker freed up
	wg        sync.WaitGroup
	releases  chan Claim
	// idle hands an attempt to a goroutine that ended one and waits for
	// the next (see spawn); stop ends those when the sender stops.
	idle       chan func()
	stop       chan struct{}
	goroutines sync.WaitGroup

	// scan: the read model must be read (start, timer, resume, probe);
	// dirty: the deliveries projection moved since the last scan; more: the
	// last scan filled its window, so the read model holds more due rows.
	scan, dirty, more bool
	lastScan          time.Time
	// nextDue caches the read model's earliest due time (nextOK: there is
	// one; nextKnown: it was read; nextStale: the projection moved since).
	nextDue, nextRead            time.Time
	nextOK, nextKnown, nextStale bool
	// noneDue: the last scan read no due row at all, not even one another
	// node holds (whose claim may lapse), so nothing falls due before
	// nextDue, a breaker probe or a move of the projection.
	noneDue bool
	// moved and appsMoved close at the next move of the deliveries
	// projection and of the app directory after they were taken; see
	// watch. With applied, moved closes only at the moves not applied
	// here, and news after a batch applied here with due news.
	moved, appsMoved, news <-chan struct{}
	applied                appliedHere
}

func (d *Dispatcher) newSendLoop(ctx context.Context) *sendLoop {
	workers := max(d.Workers, 1)
	s := &sendLoop{d: d, ctx: ctx, eps: d.endpoints(), workers: workers, suspended: map[int64]bool{}, q: newSendQueue(),
		sem: make(chan struct{}, workers), kick: make(chan struct{}, 1), releases: make(chan Claim, workers), scan: true,
		idle: make(chan func()), stop: make(chan struct{})}
	if d.Sole {
		s.recording = make(chan struct{}, maxRecording)
	}
	return s
}

// wake tells the loop a worker or an endpoint slot freed up.
func (s *sendLoop) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// followApplies has the sender learn the batches the deliveries
// projection applies on this node, when it can show them (appliedHere).
// It comes before the start scan: what was applied before is in the read
// model that scan reads.
func (s *sendLoop) followApplies() {
	if ap, ok := s.d.Projected.(appliedHere); ok {
		ap.AfterApply(s.d.noteApplied)
		s.applied = ap
	}
}

// watch takes the channels that close at the read models' next moves,
// replacing only those the loop saw closed: a channel taken afresh each
// pass would miss a move between one pass's wait and the next pass taking
// it, and the sender would sleep on a due time read before that move (a
// retry just scheduled). Seeing one closed marks the state stale (dirty,
// nextStale, scan) before the next is taken, so every move after the
// reads that clear those marks closes a channel the loop waits on.
func (s *sendLoop) watch() {
	if s.moved == nil {
		if s.applied != nil {
			s.moved = s.applied.Heard()
		} else {
			s.moved = s.d.Projected.Changed()
		}
	}
	if s.news == nil && s.applied != nil {
		s.news = s.d.news.changed()
	}
	if s.appsMoved == nil {
		s.appsMoved = s.d.AppsReady.Changed()
	}
}

// nextDue is the earliest due time a scan read with the due rows
// (DueAndNext), when read is set.
type nextDue struct {
	at       time.Time
	ok, read bool
}

// refill scans the read model into the queue when a scan is due, or when
// the queue runs short of the free slots while the read model had more;
// held says some deliveries were held back (a suspended app's).
func (s *sendLoop) refill(now time.Time, free int) (held bool) {
	if free <= 0 {
		return false
	}
	if !s.scan && s.dirty && time.Since(s.lastScan) >= scanEvery {
		s.scan = true
	}
	// The wait's timer (a second, or idleRescan when nothing was due) is
	// armed afresh at each pass, so passes coming faster than it (hand-overs
	// and freed workers under a steady load, with no projection move
	// prompting a scan) would put off the scan it stands for: a delivery
	// another node holds, whose claim may lapse.
	every := time.Second
	if s.noneDue {
		every = idleRescan
	}
	if !s.scan && time.Since(s.lastScan) >= every {
		s.scan = true
	}
	// Refilling the queue from a backlog in the read model reads on into
	// busy endpoints' rows (their slots free within a POST); other scans
	// leave out a busy endpoint with a share queued, to reach everyone
	// else's deliveries behind it.
	refill := !s.scan && s.more && len(s.q.items) < free
	if !s.scan && !refill {
		return false
	}
	want := free
	if refill {
		want = max(free, refillBatch) // one walk of the head per many deliveries
	}
	var err error
	var seen int
	var next nextDue
	s.more, held, seen, err = s.d.scanDue(s.ctx, s.eps, s.suspended, s.q, now, want, !refill, &next)
	if err != nil && s.ctx.Err() == nil {
		s.d.Log.Error("scan due deliveries", "err", err)
	}
	if next.read {
		s.nextDue, s.nextOK, s.nextKnown, s.nextStale, s.nextRead = next.at, next.ok, true, false, time.Now()
	}
	s.scan, s.dirty, s.lastScan, s.noneDue = false, false, time.Now(), seen == 0
	return held
}

// claim claims up to free queued candidates; held says some were held
// back (a suspended app's).
func (s *sendLoop) claim(now time.Time, free int) (batch []claimed, claimedAt time.Time, held bool) {
	if free <= 0 || len(s.q.items) == 0 {
		return nil, time.Time{}, false
	}
	claimedAt = time.Now()
	batch, gone, held, err := s.d.claimQueued(s.ctx, s.eps, s.suspended, s.q, now, free)
	if err != nil && s.ctx.Err() == nil {
		s.d.Log.Error("claim due deliveries", "err", err)
	}
	s.giveBack(gone...)
	return batch, claimedAt, held
}

// launch starts one attempt per claim, each holding a worker until its
// outcome is appended and its claim until it is projected (or, when the
// outcome's append released the claim, its mark as held by this node:
// this node's scans pass over it until the projection shows the outcome). A Sole
// dispatcher's attempt gives its worker back once the POST ended, taking
// one of maxRecording places while its outcome waits for the log: the
// log's group commit writes every outcome queued during the previous
// commit in one transaction, and an attempt holding its worker through
// that wait held the outcomes per commit to about half the workers (one
// fsync pair per 30 outcomes in a drain). The claim is still held until
// the outcome is durable and projected, so nothing about the delivery
// changes but how many outcomes share a commit. Postgres nodes keep the
// worker: their appends are transactions of their own.
func (s *sendLoop) launch(batch []claimed, claimedAt time.Time) {
	for _, c := range batch {
		s.sem <- struct{}{}
		s.wg.Add(1)
		s.d.setAttempting(c.DeliveryID, true)
		s.spawn(func() {
			defer s.wg.Done()
			worker, recording := true, false
			freeWorker := func() {
				if worker {
					worker = false
					<-s.sem
					s.wake()
				}
			}
			posted := s.wake
			if s.recording != nil {
				posted = func() {
					s.recording <- struct{}{}
					recording = true
					freeWorker()
				}
			}
			at := claimedAt
			if c.pre != nil {
				at = c.pre.at
			}
			released, recorded := s.d.attempt(s.ctx, s.eps, c, at, posted, freeWorker)
			freeWorker()
			if recording {
				<-s.recording
			}
			if released {
				s.d.setAttempting(c.DeliveryID, false)
				return
			}
			if !recorded {
				s.d.recheckOnRelease(c.DeliveryID)
			}
			s.releases <- c.Claim
		})
	}
}

// spawn runs f on a goroutine that ended an earlier attempt and waits for
// the next, or on a new one when none waits. An attempt's goroutine grows
// its stack to the depth of a POST and of the outcome's encoding: a new
// goroutine per attempt copied its stack up from the starting size every
// time (runtime.newstack, about 4 % of a drain's CPU). At most as many
// wait as attempts ran at once, until the sender stops.
func (s *sendLoop) spawn(f func()) {
	select {
	case s.idle <- f:
	default:
		s.goroutines.Add(1)
		go s.runAttempts(f)
	}
}

// runAttempts runs f, then every attempt handed to it, until the sender stops.
func (s *sendLoop) runAttempts(f func()) {
	defer s.goroutines.Done()
	for {
		f()
		select {
		case f = <-s.idle:
		case <-s.stop:
			return
		}
	}
}

// endGoroutines ends the goroutines waiting for attempts, once every
// attempt has ended.
func (s *sendLoop) endGoroutines() {
	close(s.stop)
	s.goroutines.Wait()
}

// maxRecording bounds the attempts of a Sole dispatcher that ended their
// POST and wait for their outcome to be written (a full group of the
// log's commit), so a stalled log stops the sender rather than piling up
// POSTs whose outcomes are not recorded.
const maxRecording = 256

// waitFor is how long the loop may sleep from now: until the earliest
// retry or breaker probe falls due, at most a second, or idleRescan when
// the last scan found nothing due and the earliest due time is known as of
// the projection's last move.
func (s *sendLoop) waitFor(now time.Time) time.Duration {
	// The earliest due time is read again only once the deliveries
	// projection moved, at most every scanEvery (wait arms a timer for
	// the re-read when it is held back, so a sleep never rests on a time
	// read before the last move): one read per loop pass was one query
	// per freed slot and per hand-over on Postgres. Only a time still
	// ahead shortens the wait, and only the projection moving can bring
	// one ahead of what was read.
	if !s.nextKnown || (s.nextStale && time.Since(s.nextRead) >= scanEvery) {
		var err error
		s.nextDue, s.nextOK, err = s.d.Deliveries.NextDue(s.ctx)
		s.nextKnown, s.nextStale, s.nextRead = err == nil, false, time.Now()
	}
	wait := time.Second
	if s.noneDue && s.nextKnown && !s.nextStale && len(s.q.items) == 0 {
		// Nothing to look for: a scan a second was a Postgres
		// transaction a second on an idle node. A stale due time may
		// predate a retry just scheduled, so it never earns the long
		// sleep (the clock may jump past the retry meanwhile).
		wait = idleRescan
	}
	if s.nextKnown && s.nextOK && s.nextDue.After(now) && s.nextDue.Sub(now) < wait {
		wait = s.nextDue.Sub(now)
	}
	if next, ok := s.eps.nextProbe(); ok && next.Sub(now) < wait {
		wait = max(next.Sub(now), time.Millisecond)
	}
	return wait
}

// spacing is how long, in real time, until the loop must come back to
// scan after a projection move (dirty) or to re-read a stale earliest due
// time, both held back to one per scanEvery; ok is false when neither
// waits.
func (s *sendLoop) spacing() (d time.Duration, ok bool) {
	d = time.Duration(1<<63 - 1)
	if s.dirty {
		d, ok = scanEvery-time.Since(s.lastScan), true
	}
	if s.nextStale {
		d, ok = min(d, scanEvery-time.Since(s.nextRead)), true
	}
	return max(d, time.Millisecond), ok
}

// wait sleeps until there is work: a retry or probe falls due, the
// deliveries projection moved (a scan follows after scanEvery), an app
// changed while deliveries are held (a suspended app's), a worker freed up
// or a delivery was handed over. It returns false once ctx ended.
func (s *sendLoop) wait(now time.Time, held bool) bool {
	wait := s.waitFor(now)
	// The spacing of projection-driven scans and re-reads is real time,
	// whatever clock schedules the retries (tests move that one by
	// hand, and a sleep on it would outlast a move it has not seen).
	var soon <-chan time.Time
	if d, ok := s.spacing(); ok {
		timer := time.NewTimer(d)
		defer timer.Stop()
		soon = timer.C
	}
	var appsMoved <-chan struct{}
	if held {
		appsMoved = s.appsMoved
	}
	select {
	case <-s.ctx.Done():
		return false
	case <-s.d.Clock.Until(now.Add(wait)):
		s.scan = true
	case <-soon:
		// A stale due time alone is read again by the next pass.
		s.scan = s.scan || s.dirty
	case <-s.moved:
	case <-s.news:
	case <-appsMoved:
	case <-s.kick:
	case <-s.d.handover.wakeup():
	}
	// Whichever case the select picked, a move seen now is acted on by
	// the next pass.
	select {
	case <-s.moved:
		s.dirty, s.nextStale, s.moved = true, true, nil
	default:
	}
	select {
	case <-s.news:
		s.dirty, s.nextStale, s.news = true, true, nil
	default:
	}
	select {
	case <-appsMoved: // a resumed app's deliveries are due at once
		s.scan, s.appsMoved = true, nil
	default:
	}
	return true
}

// scanDue reads due deliveries from the read model into q, at least want
// new ones when there are that many: those of a suspended app are held
// (pending or retrying, no attempt recorded, no retry used) until it is
// resumed, and held says some were; those this node holds or has queued
// are passed over. Suspended apps (kept in suspended across passes,
// dropped once resumed), apps whose sole endpoint's breaker is open, and
// (skipBusy) apps whose sole endpoint is busy and already has a full share
// queued are named to Due, which leaves their queues out, so a backlog nobody can
// send now is not read again and others' deliveries behind it are found.
// Rows others hold stay first in the due order, so the scan widens past
// what it already knows, up to maxDueScan rows. more says the window was
// full: the read model may hold further due deliveries.
func (d *Dispatcher) scanDue(ctx context.Context, eps *breakers, suspended map[int64]bool, q *sendQueue, now time.Time, want int, skipBusy bool, next *nextDue) (more, held bool, seen int, err error) {
	for id := range suspended {
		if !d.paused(id) {
			delete(suspended, id)
		}
	}
	only := func(key endpointKey) (string, bool) {
		app, _ := d.Apps.ByID(key.app)
		eps := app.WebhookEndpoints()
		if len(eps) != 1 || eps[0].EndpointID != key.endpoint {
			return "", false
		}
		return eps[0].URL, true
	}
	var skip []int64
	skippedBusy := false // a busy endpoint's rows were left out: the read model may hold more
	for _, b := range eps.blocked(now, only) {
		switch {
		case b.open:
			skip = append(skip, b.app)
		case skipBusy && q.perApp[b.app] >= eps.limit:
			skip, skippedBusy = append(skip, b.app), true
		}
	}
	for id := range suspended {
		skip = append(skip, id)
	}
	// The head of the due order is mostly what this node holds or has
	// queued: read just past it, widening only while that is not enough.
	found := 0
	for limit := min(max(want+len(q.items)+d.attemptingCount(), 64), maxDueScan); ; limit = min(4*limit, maxDueScan) {
		var rows []domain.DueDelivery
		if dn, ok := d.Deliveries.(DueAndNext); ok && next != nil {
			rows, next.at, next.ok, err = dn.DueAndNext(ctx, now, limit, skip...)
			next.read = err == nil
		} else {
			rows, err = d.Deliveries.Due(ctx, now, limit, skip...)
		}
		if err != nil {
			return false, len(suspended) > 0, -1, err
		}
		found = 0
		for _, del := range rows {
			if q.has[del.DeliveryID] || d.passOver(del.DeliveryID) {
				continue
			}
			if app, ok := d.Apps.ByID(del.AppID); ok && app.Suspended {
				suspended[del.AppID] = true
				continue
			}
			if q.add(candidate{id: del.DeliveryID, key: endpointKey{app: del.AppID, endpoint: del.EndpointID}}) {
				found++
			}
		}
		full := len(rows) == limit
		if found >= want || !full || limit >= maxDueScan || len(q.items) >= maxQueued {
			return full || skippedBusy, len(suspended) > 0, len(rows), nil
		}
	}
}

// claimQueued claims up to n queued candidates that may be attempted now,
// in queue order: each reserves a slot of its endpoint (an endpoint at its
// share keeps its candidates queued; one whose breaker is open drops them,
// to be found by a scan once its probe is due), a suspended app's are
// dropped (held until the resume), and those another node holds are
// dropped. Each returned claim holds an endpoint slot.
//
// A candidate whose creation claimed it (pre) is taken with that claim; one
// dropped, or queued for half its claim's attempt budget, is returned in
// gone, its claim for the caller to give back.
func (d *Dispatcher) claimQueued(ctx context.Context, eps *breakers, suspended map[int64]bool, q *sendQueue, now time.Time, n int) (out []claimed, gone []*preClaimed, held bool, err error) {
	var reserved []claimed
	var taken, drop []int          // indexes into q.items, ascending
	busy := map[endpointKey]bool{} // endpoints found at their share in this pass
	for i, c := range q.items {
		if len(out)+len(reserved) >= n || len(busy) == len(q.perKey) {
			break // enough, or every queued endpoint is at its share
		}
		if busy[c.key] {
			continue
		}
		app, ok := d.Apps.ByID(c.key.app)
		if ok && app.Suspended {
			suspended[c.key.app], held = true, true
			drop = append(drop, i)
			continue
		}
		url := endpointURL(app, c.key.endpoint)
		if c.pre != nil && time.Since(c.pre.at) > AttemptBudget(d.claimTTL())/2 {
			// Queued behind a busy endpoint for half its claim's budget:
			// given back, and found again by a scan once released.
			gone = append(gone, c.pre)
			drop = append(drop, i)
			continue
		}
		got, probe := eps.acquire(c.key, url, now)
		if !got {
			if eps.isOpen(c.key, url, now) {
				drop = append(drop, i)
			} else {
				busy[c.key] = true
			}
			continue
		}
		if c.pre != nil {
			out = append(out, claimed{Claim: c.pre.claim, ep: c.key, url: url, probe: probe, pre: c.pre})
		} else {
			reserved = append(reserved, claimed{Claim: Claim{DeliveryID: c.id}, ep: c.key, url: url, probe: probe})
		}
		taken = append(taken, i)
	}
	// A dropped delivery whose creation claimed it gives the claim back.
	for _, i := range drop {
		if pre := q.items[i].pre; pre != nil && !slices.Contains(gone, pre) {
			gone = append(gone, pre)
		}
	}
	if len(reserved) == 0 {
		all := append(drop, taken...)
		slices.Sort(all)
		q.remove(all)
		return out, gone, held, nil
	}
	ids := make([]string, len(reserved))
	for i, r := range reserved {
		ids[i] = r.DeliveryID
	}
	got, streams, err := d.claimAndLoad(ctx, ids)
	if err != nil {
		for _, r := range reserved {
			eps.cancel(r.ep, r.url, r.probe)
		}
		// The reserved stay queued for the next pass; those creation
		// claimed go now.
		all := append(drop, takenPre(q, taken)...)
		slices.Sort(all)
		q.remove(all)
		return out, gone, held, err
	}
	tokens := make(map[string]Claim, len(got))
	for _, c := range got {
		tokens[c.DeliveryID] = c
	}
	for _, r := range reserved {
		c, ok := tokens[r.DeliveryID]
		if !ok {
			eps.cancel(r.ep, r.url, r.probe) // another node holds it
			// Its claim may lapse (the node died): a scan that sees it
			// keeps the sender's timed rescans short.
			d.recheck.Store(true)
			continue
		}
		r.Claim = c
		if streams != nil {
			r.stream = &loadedStream{recs: streams[r.DeliveryID]}
		}
		out = append(out, r)
	}
	// Claimed, or held by another node: out of the queue either way.
	all := append(drop, taken...)
	slices.Sort(all)
	q.remove(all)
	return out, gone, held, nil
}

// takenPre are the indexes of taken whose candidates creation claimed.
func takenPre(q *sendQueue, taken []int) []int {
	var out []int
	for _, i := range taken {
		if q.items[i].pre != nil {
			out = append(out, i)
		}
	}
	return out
}

// maxRelease bounds the claims one release statement gives back.
const maxRelease = 256

// heldClaim is a claim waiting in Dispatcher.held.
type heldClaim struct {
	Claim
	passedOver bool
}

// passOver says whether a scan passes over id because this node holds its
// claim, and notes it when the claim is one of the held: its release must
// be followed by a scan (the delivery is due again: a retry or a resend).
func (d *Dispatcher) passOver(id string) bool {
	d.attemptingMu.Lock()
	defer d.attemptingMu.Unlock()
	if h, ok := d.held[id]; ok && !h.passedOver {
		h.passedOver = true
		d.held[id] = h
	}
	return d.attempting[id]
}

// hold adds ended attempts' claims to d.held.
func (d *Dispatcher) hold(cs []Claim) {
	d.attemptingMu.Lock()
	defer d.attemptingMu.Unlock()
	if d.held == nil {
		d.held = map[string]heldClaim{}
	}
	for _, c := range cs {
		d.held[c.DeliveryID] = heldClaim{Claim: c}
	}
}

// released unmarks released claims as attempting (a scan may queue their
// deliveries again) and, when a scan passed over one of them, has the
// sender scan again, or, when one's attempt recorded no outcome, scan
// again as after a move.
func (d *Dispatcher) released(cs []Claim, wasHeld map[string]bool) {
	d.attemptingMu.Lock()
	again, recheck := false, false
	for _, c := range cs {
		delete(d.attempting, c.DeliveryID)
		again = again || wasHeld[c.DeliveryID]
		if d.unrecorded[c.DeliveryID] {
			delete(d.unrecorded, c.DeliveryID)
			recheck = true
		}
	}
	d.attemptingMu.Unlock()
	if again {
		d.rescan.Store(true)
	}
	if recheck {
		d.recheck.Store(true)
	}
	if again || recheck {
		d.handover.signal()
	}
}

// recheckOnRelease has the sender scan again once id's claim is released:
// its attempt recorded no outcome (its load or append failed, it found the
// delivery not due or its app suspended), so the delivery may still be
// due and no projected outcome will prompt that scan.
func (d *Dispatcher) recheckOnRelease(id string) {
	d.attemptingMu.Lock()
	defer d.attemptingMu.Unlock()
	if d.unrecorded == nil {
		d.unrecorded = map[string]bool{}
	}
	d.unrecorded[id] = true
}

// takeHeldNotes empties d.held like takeHeld, with which of them a scan
// passed over.
func (d *Dispatcher) takeHeldNotes() ([]Claim, map[string]bool) {
	d.attemptingMu.Lock()
	defer d.attemptingMu.Unlock()
	var out []Claim
	var passed map[string]bool
	for id, h := range d.held {
		if len(out) == maxRelease {
			break
		}
		out = append(out, h.Claim)
		if h.passedOver {
			if passed == nil {
				passed = map[string]bool{}
			}
			passed[id] = true
		}
		delete(d.held, id)
	}
	return out, passed
}

// claimReleasing claims ids; with ReleasingClaims it also gives back, in
// the same transaction, the held claims of ended attempts. A release that
// failed with the claim, or could not be made in it, is made on its own.
func (d *Dispatcher) claimReleasing(ctx context.Context, ids []string) ([]Claim, error) {
	rc, ok := d.Claims.(ReleasingClaims)
	if !ok {
		return d.Claims.Claim(ctx, d.Node, ids, d.claimTTL())
	}
	held, passed := d.takeHeldNotes()
	if len(held) == 0 {
		return d.Claims.Claim(ctx, d.Node, ids, d.claimTTL())
	}
	got, unreleased, err := rc.ReleaseAndClaim(ctx, held, d.Node, ids, d.claimTTL())
	if err != nil {
		unreleased = held
	}
	if len(unreleased) > 0 {
		d.release(ctx, unreleased)
	}
	d.released(held, passed)
	return got, err
}

// release gives claims back on their own, even when ctx has ended:
// otherwise each delivery would wait for its claim to lapse on every
// other node.
func (d *Dispatcher) release(ctx context.Context, cs []Claim) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := d.Claims.Release(rctx, cs); err != nil {
		d.Log.Warn("release delivery claims; they lapse by themselves", "claims", len(cs), "first_delivery_id", cs[0].DeliveryID, "err", err)
	}
}

// releaseClaims gives back the claims of ended attempts until releases is
// closed, each call of Claims.Release taking every claim that arrived
// while the previous one ran, and only then unmarks them as attempting (so
// a scan cannot queue a delivery whose claim this node still holds). With
// ReleasingClaims, claims first wait up to ReleaseHold for the sender's
// next claim to carry them (claimReleasing), and only those still waiting
// then are released here. Claims are released even when ctx has ended.
func (d *Dispatcher) releaseClaims(ctx context.Context, releases <-chan Claim, done chan<- struct{}) {
	defer close(done)
	if _, ok := d.Claims.(ReleasingClaims); ok {
		d.holdClaims(ctx, releases)
		return
	}
	batch := make([]Claim, 0, maxRelease)
	for first := range releases {
		batch = append(batch[:0], first)
	more:
		for len(batch) < maxRelease {
			select {
			case c, ok := <-releases:
				if !ok {
					break more
				}
				batch = append(batch, c)
			default:
				break more
			}
		}
		d.release(ctx, batch)
		d.released(batch, nil)
	}
}

// holdClaims is releaseClaims for ReleasingClaims: each claim waits in
// d.held for up to ReleaseHold, then whatever the sender's claims have not
// carried is released here; at the end, everything held is.
func (d *Dispatcher) holdClaims(ctx context.Context, releases <-chan Claim) {
	flush := func() {
		for {
			cs, passed := d.takeHeldNotes()
			if len(cs) == 0 {
				return
			}
			d.release(ctx, cs)
			d.released(cs, passed)
		}
	}
	defer flush()
	timer := time.NewTimer(ReleaseHold)
	timer.Stop()
	for first := range releases {
		d.hold([]Claim{first})
		timer.Reset(ReleaseHold)
	wait:
		for {
			select {
			case c, ok := <-releases:
				if !ok {
					return
				}
				d.hold([]Claim{c})
			case <-timer.C:
				break wait
			}
		}
		flush()
	}
}

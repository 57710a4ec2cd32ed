package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	partneropen "github.com/healthtech/partner-open-platform/sdk/go"
)

// listener forwards the feed's events to one local URL.
type listener struct {
	client    *partneropen.Client
	forwardTo string
	secret    string
	cursor    string
	// cursorFile keeps the cursor of the last event handled, so a new
	// listen resumes after it.
	cursorFile string
	interval   time.Duration
	// wait is the feed long-poll's wait (0: poll every interval instead).
	wait   time.Duration
	http   *http.Client
	out    io.Writer
	errOut io.Writer
}

func listen(ctx context.Context, c *partneropen.Client, appID string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	forwardTo := fs.String("forward-to", "", "the local URL each event is POSTed to, e.g. http://localhost:3000/hook (required)")
	secret := fs.String("secret", os.Getenv("OPENPLATFORM_LISTEN_SECRET"), "the whsec_ secret to sign with (default: a new one, printed)")
	cursorFile := fs.String("cursor-file", "", "where the cursor is kept between runs (default: in the user cache folder, per app)")
	after := fs.String("after", "", "start after this feed cursor (0-0: the first event) instead of the saved cursor or now")
	interval := fs.Duration("interval", time.Second, "how often the feed is read when caught up and the platform does not hold requests (see --wait), and after a failed read")
	wait := fs.Duration("wait", partneropen.MaxFeedWait, "how long the platform may hold a feed read until an event arrives (long-poll; 0: poll every --interval)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return usageError{"listen takes no arguments, only flags"}
	}
	u, err := url.Parse(*forwardTo)
	if *forwardTo == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError{"--forward-to must be an http(s) URL, e.g. http://localhost:3000/hook"}
	}
	if *interval < 100*time.Millisecond {
		return usageError{"--interval must be at least 100ms"}
	}
	if *wait < 0 || *wait > partneropen.MaxFeedWait || *wait%time.Second != 0 {
		return usageError{"--wait must be whole seconds from 0s to " + partneropen.MaxFeedWait.String()}
	}
	l := &listener{client: c, forwardTo: *forwardTo, secret: *secret, cursorFile: *cursorFile, interval: *interval, wait: *wait,
		http: &http.Client{Timeout: 30 * time.Second}, out: stdout, errOut: stderr}
	if l.secret == "" {
		l.secret = newSecret()
	}
	if l.cursorFile == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no user cache folder for the cursor (pass --cursor-file): %w", err)
		}
		l.cursorFile = filepath.Join(dir, "openplatform", "listen-"+appID+".cursor")
	}
	if err := l.start(ctx, *after); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Ready! Forwarding to %s. Your webhook signing secret is %s (^C to quit)\n", l.forwardTo, l.secret)
	l.loop(ctx)
	fmt.Fprintf(stdout, "Stopped after cursor %s (the next listen resumes there)\n", l.cursor)
	return nil
}

// newSecret is a signing secret for this listen session, shaped like the
// platform's endpoint secrets.
func newSecret() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "whsec_" + hex.EncodeToString(b)
}

// start sets the first cursor: --after, else the saved one, else the end
// of the feed now (only new events are forwarded).
func (l *listener) start(ctx context.Context, after string) error {
	switch saved, err := os.ReadFile(l.cursorFile); {
	case after != "":
		l.cursor = after
		return nil
	case err == nil && strings.TrimSpace(string(saved)) != "":
		l.cursor = strings.TrimSpace(string(saved))
		fmt.Fprintf(l.out, "Resuming after cursor %s\n", l.cursor)
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	cursor := ""
	for {
		page, err := l.client.ListEvents(ctx, cursor, 1000)
		if err != nil {
			return fmt.Errorf("read the event feed: %w", err)
		}
		cursor = page.NextCursor
		if !page.HasMore || len(page.Events) == 0 {
			break
		}
	}
	l.cursor = cursor
	return l.save()
}

// loop reads the feed after the cursor until ctx ends, forwarding each
// event. Caught up, it asks the platform to hold the next read until an
// event arrives (--wait), so an event is forwarded about as soon as it
// enters the feed with one request per wait; a platform that refuses wait
// (422 or 400) or answers at once regardless (one without long-polls, or
// a node shutting down) is read every interval instead. A failed read is
// printed and retried after the interval.
func (l *listener) loop(ctx context.Context) {
	for ctx.Err() == nil {
		began := time.Now()
		page, err := l.client.WaitEvents(ctx, l.cursor, 100, l.wait)
		var apiErr *partneropen.APIError
		if l.wait > 0 && errors.As(err, &apiErr) && (apiErr.Status == http.StatusBadRequest || apiErr.Status == http.StatusUnprocessableEntity) {
			fmt.Fprintf(l.errOut, "%s  the platform does not hold feed reads (%d %s): reading it every %s\n", now(), apiErr.Status, apiErr.Code, l.interval)
			l.wait = 0
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(l.errOut, "%s  feed read failed (retrying): %v\n", now(), err)
			}
		} else {
			for _, ev := range page.Events {
				if ctx.Err() != nil {
					return
				}
				l.forward(ctx, ev)
				if ctx.Err() != nil {
					return // stopped mid-forward: the next listen sends this event again
				}
				l.cursor = ev.Cursor
				if err := l.save(); err != nil {
					fmt.Fprintf(l.errOut, "%s  cursor not saved: %v\n", now(), err)
				}
			}
			if page.HasMore && len(page.Events) > 0 {
				continue
			}
			// An empty answer after (most of) the wait: ask again at once.
			if l.wait > 0 && (len(page.Events) > 0 || time.Since(began) >= l.wait/2) {
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(l.interval):
		}
	}
}

// forward POSTs one event's body with the platform's webhook headers,
// signed with the session's secret, and prints one line with the answer.
func (l *listener) forward(ctx context.Context, ev partneropen.FeedEvent) {
	prefix := fmt.Sprintf("%s  --> %s [%s]", now(), ev.Event, ev.DeliveryID)
	if len(ev.Payload) == 0 || string(ev.Payload) == "null" {
		fmt.Fprintf(l.out, "%s  skipped: the person it was about was erased\n", prefix)
		return
	}
	body := []byte(ev.Payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forwardTo, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(l.out, "%s  <-- error: %v\n", prefix, err)
		return
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "partner-open-platform-webhooks/1 (openplatform listen)")
	req.Header.Set("X-Webhook-Id", ev.DeliveryID)
	req.Header.Set("X-Webhook-Event", ev.Event)
	req.Header.Set("X-Webhook-Timestamp", ts)
	req.Header.Set("X-Webhook-Signature", partneropen.SignWebhook(l.secret, ts, body))
	res, err := l.http.Do(req)
	if err != nil {
		fmt.Fprintf(l.out, "%s  <-- error: %v\n", prefix, err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	_ = res.Body.Close()
	fmt.Fprintf(l.out, "%s  <-- [%d] POST %s\n", prefix, res.StatusCode, l.forwardTo)
}

// save writes the cursor atomically (a new file renamed over the old).
func (l *listener) save() error {
	if err := os.MkdirAll(filepath.Dir(l.cursorFile), 0o700); err != nil {
		return err
	}
	tmp := l.cursorFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(l.cursor+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, l.cursorFile)
}

func now() string { return time.Now().Format("2006-01-02 15:04:05") }

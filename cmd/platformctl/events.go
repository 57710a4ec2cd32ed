package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// pageSize is how many events one history or events request asks for.
const pageSize = 1000

// followPoll is how often `events --follow` asks for new events at the log's end.
var followPoll = time.Second

// position is a place in the global log.
type position struct {
	Commit  uint64 `json:"commit"`
	Prepare uint64 `json:"prepare"`
}

// String renders the position as commit/prepare.
func (p position) String() string { return fmt.Sprintf("%d/%d", p.Commit, p.Prepare) }

// eventView is one recorded event as the admin API shows it.
type eventView struct {
	ID       string          `json:"id"`
	Stream   string          `json:"stream"`
	Type     string          `json:"type"`
	Revision uint64          `json:"revision"`
	Position position        `json:"position"`
	Time     string          `json:"time"`
	Data     json.RawMessage `json:"data"`
	Metadata json.RawMessage `json:"metadata"`
}

// eventPage is the data of a history or events response; each event is kept
// raw too so --json prints exactly what the server sent.
type eventPage struct {
	raw    []json.RawMessage
	events []eventView
}

func decodePage(data json.RawMessage) (eventPage, error) {
	var out struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := decode(data, &out); err != nil {
		return eventPage{}, err
	}
	p := eventPage{raw: out.Events, events: make([]eventView, len(out.Events))}
	for i, raw := range out.Events {
		if err := decode(raw, &p.events[i]); err != nil {
			return eventPage{}, err
		}
	}
	return p, nil
}

// nextPage is how many events to ask for when printed of limit (0: no limit) are out.
func nextPage(limit, printed uint64) uint64 {
	if limit > 0 && limit-printed < pageSize {
		return limit - printed
	}
	return pageSize
}

func (c *cli) history(args []string) error {
	fs := c.flags("history")
	from := fs.Uint64("from", 0, "first revision to print")
	limit := fs.Uint64("limit", 0, "most events to print (0: all)")
	reveal := c.revealFlags(fs)
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] == "" {
		return usagef("history needs exactly one STREAM argument (e.g. app-12, user-345)")
	}
	stream := rest[0]
	api, err := c.api()
	if err != nil {
		return err
	}
	next, printed := *from, uint64(0)
	for {
		n := nextPage(*limit, printed)
		q := url.Values{"stream": {stream}, "from": {strconv.FormatUint(next, 10)}, "limit": {strconv.FormatUint(n, 10)}}
		reveal(q)
		data, err := api.do(c.ctx, "GET", "/admin/v1/history?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		page, err := decodePage(data)
		if err != nil {
			return err
		}
		for i, ev := range page.events {
			if err := c.printHistoryEvent(ev, page.raw[i]); err != nil {
				return err
			}
			next = ev.Revision + 1
			printed++
		}
		if uint64(len(page.events)) < n || (*limit > 0 && printed >= *limit) {
			break
		}
	}
	if printed == 0 {
		fmt.Fprintf(c.stderr, "history: stream %s has no events from revision %d\n", stream, *from)
	}
	return nil
}

// printHistoryEvent prints a header line, the data indented, the metadata
// on one line, and a blank line.
func (c *cli) printHistoryEvent(ev eventView, raw json.RawMessage) error {
	if c.g.json {
		return printJSONLine(c.stdout, raw)
	}
	var data bytes.Buffer
	if len(bytes.TrimSpace(ev.Data)) == 0 {
		data.WriteString("null")
	} else if err := json.Indent(&data, ev.Data, "  ", "  "); err != nil {
		return fmt.Errorf("unexpected event data: %w", err)
	}
	meta, err := compact(ev.Metadata)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "revision=%d time=%s type=%s position=%s\n  %s\n  metadata %s\n\n",
		ev.Revision, ev.Time, ev.Type, ev.Position, data.String(), meta)
	return err
}

func (c *cli) events(args []string) error {
	fs := c.flags("events")
	afterCommit := fs.Uint64("after-commit", 0, "print events after this commit position")
	afterPrepare := fs.Uint64("after-prepare", 0, "print events after this prepare position (default: --after-commit)")
	limit := fs.Uint64("limit", 0, "most events to print (0: all)")
	reveal := c.revealFlags(fs)
	follow := fs.Bool("follow", false, "keep polling every second for new events until interrupted")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("events takes no arguments, got %q", rest)
	}
	prepareSet := false
	fs.Visit(func(f *flag.Flag) { prepareSet = prepareSet || f.Name == "after-prepare" })
	api, err := c.api()
	if err != nil {
		return err
	}
	after := position{Commit: *afterCommit, Prepare: *afterPrepare}
	var printed uint64
	for {
		n := nextPage(*limit, printed)
		q := url.Values{"after_commit": {strconv.FormatUint(after.Commit, 10)}, "limit": {strconv.FormatUint(n, 10)}}
		reveal(q)
		if prepareSet || printed > 0 {
			q.Set("after_prepare", strconv.FormatUint(after.Prepare, 10))
		}
		data, err := api.do(c.ctx, "GET", "/admin/v1/events?"+q.Encode(), nil)
		if err != nil {
			if *follow && c.ctx.Err() != nil {
				return nil
			}
			return err
		}
		page, err := decodePage(data)
		if err != nil {
			return err
		}
		for i, ev := range page.events {
			if err := c.printLogEvent(ev, page.raw[i]); err != nil {
				return err
			}
			after = ev.Position
			printed++
		}
		if *limit > 0 && printed >= *limit {
			return nil
		}
		if uint64(len(page.events)) < n {
			if !*follow {
				return nil
			}
			select {
			case <-c.ctx.Done():
				return nil
			case <-time.After(followPoll):
			}
		}
	}
}

// printLogEvent prints one event of the global log on one line.
func (c *cli) printLogEvent(ev eventView, raw json.RawMessage) error {
	if c.g.json {
		return printJSONLine(c.stdout, raw)
	}
	data, err := compact(ev.Data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "position=%s time=%s stream=%s revision=%d type=%s data=%s\n",
		ev.Position, ev.Time, ev.Stream, ev.Revision, ev.Type, data)
	return err
}

// revealFlags adds --reveal and --reason to fs; the returned func adds them
// to a request's query (the server refuses a reveal without a reason, or by
// an operator who is not an auditor).
func (c *cli) revealFlags(fs *flag.FlagSet) func(url.Values) {
	reveal := fs.Bool("reveal", false, "show personal fields in clear (auditors; needs --reason; audited)")
	reason := fs.String("reason", "", "why the personal data is revealed")
	return func(q url.Values) {
		if *reveal {
			q.Set("reveal", "true")
			q.Set("reason", *reason)
		}
	}
}

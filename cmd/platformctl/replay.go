package main

import (
	"fmt"
	"strconv"
)

const replayUsage = "replay needs a subcommand: start, status, cancel"

// replay asks for an app's past webhook events to be delivered again to one
// of its endpoints, and follows or stops the replay, through the partner
// routes (/open/v1/webhooks/replays) signed with the app's own credentials
// by scheme H, as the endpoints commands are: the partner's action, which
// the platform records as the app's.
func (c *cli) replay(args []string) error {
	if len(args) == 0 {
		return usagef(replayUsage)
	}
	fs := c.flags("replay " + args[0])
	appKey := fs.String("app-key", c.env("PLATFORM_APP_KEY"), "the app's app_key (env PLATFORM_APP_KEY)")
	appSecret := fs.String("app-secret", c.env("PLATFORM_APP_SECRET"), "the app's app_secret (env PLATFORM_APP_SECRET)")
	var evs stringList
	fs.Var(&evs, "event", "start: event type or prefix wildcard such as health.report.* (repeatable, at least one)")
	endpoint := fs.Int64("endpoint", 0, "start: the endpoint to deliver to (0, the default: the app's default endpoint)")
	since := fs.String("since", "", "start: replay the events since this time (RFC 3339, e.g. 2026-11-01T00:00:00+08:00)")
	cursor := fs.String("cursor", "", "start: replay the events after this feed cursor (GET /open/v1/webhooks/events)")
	until := fs.String("until", "", "start: only events that occurred at or before this time (RFC 3339)")
	rest, err := parse(fs, args[1:], true)
	if err != nil {
		return err
	}
	if *appKey == "" || *appSecret == "" {
		return usagef("replay needs the app's credentials: --app-key and --app-secret (or PLATFORM_APP_KEY and PLATFORM_APP_SECRET)")
	}
	const base = "/open/v1/webhooks/replays"
	var method, path string
	var body map[string]any
	switch args[0] {
	case "start":
		if len(rest) != 0 {
			return usagef("replay start takes only flags")
		}
		if len(evs) == 0 || (*since == "") == (*cursor == "") || *endpoint < 0 {
			return usagef("replay start needs --event EVENT (repeatable) and one of --since TIME or --cursor CURSOR")
		}
		body = map[string]any{"endpoint_id": *endpoint, "events": []string(evs)}
		if *since != "" {
			body["since"] = *since
		} else {
			body["cursor"] = *cursor
		}
		if *until != "" {
			body["until"] = *until
		}
		method, path = "POST", base
	case "status", "cancel":
		if len(rest) != 1 {
			return usagef("replay %s needs one REPLAY_ID", args[0])
		}
		if n, err := strconv.ParseInt(rest[0], 10, 64); err != nil || n <= 0 {
			return usagef("REPLAY_ID must be a positive integer, got %q", rest[0])
		}
		method, path = "GET", base+"/"+rest[0]
		if args[0] == "cancel" {
			method, path = "POST", path+"/cancel"
		}
	default:
		return usagef("unknown replay subcommand %q; %s", args[0], replayUsage)
	}
	api, err := newClient(c.g.server, "")
	if err != nil {
		return err
	}
	api.sign = partnerCreds{key: *appKey, secret: *appSecret}.signH
	if args[0] == "start" {
		fmt.Fprintln(c.stderr, "note: follow the replay with `platformctl replay status REPLAY_ID`")
	}
	return c.printWith(api, method, path, body)
}

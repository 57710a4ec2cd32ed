package main

import (
	"fmt"
	"net/url"
	"strconv"
)

// erasures runs `erasures [--app ID]`: the erasures the apps that held the
// person have not acknowledged yet, one per line.
func (c *cli) erasures(args []string) error {
	fs := c.flags("erasures")
	app := fs.Int64("app", 0, "only this app's erasures")
	after := fs.Int64("after", 0, "erasures after this seq")
	limit := fs.Int("limit", 100, "most erasures to print (at most 1000)")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usagef("erasures takes only flags")
	}
	q := url.Values{"after": {strconv.FormatInt(*after, 10)}, "limit": {strconv.Itoa(*limit)}}
	if *app != 0 {
		q.Set("app_id", strconv.FormatInt(*app, 10))
	}
	return c.show("GET", "/admin/v1/erasures?"+q.Encode(), nil, func(data map[string]any) {
		t := newTable(c.stdout, "SEQ", "APP", "OPEN_USER_ID", "ERASED_AT", "ERASED_BY", "REASON")
		for _, e := range asList(data["erasures"]) {
			row, _ := e.(map[string]any)
			t.row(plain(row["seq"]), plain(row["app_id"]), plain(row["open_user_id"]), plain(row["erased_at"]), plain(row["erased_by"]), plain(row["reason"]))
		}
		_ = t.flush()
		if next := data["next_after"]; next != nil {
			fmt.Fprintf(c.stderr, "more: --after %s\n", plain(next))
		}
	})
}

package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// deliveryView is a delivery as the admin API shows it.
type deliveryView struct {
	DeliveryID     string  `json:"delivery_id"`
	AppID          int64   `json:"app_id"`
	Event          string  `json:"event"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	CreatedAt      string  `json:"created_at"`
	AttemptLog     []struct {
		Attempt    int     `json:"attempt"`
		At         string  `json:"at"`
		StatusCode *int    `json:"status_code"`
		LatencyMS  int64   `json:"latency_ms"`
		Error      *string `json:"error"`
		Outcome    string  `json:"outcome"`
	} `json:"attempt_log"`
	Payload json.RawMessage `json:"payload"`
}

func orDash[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func (c *cli) deliveries(args []string) error {
	if len(args) == 0 {
		return usagef("deliveries needs a subcommand: list, show, resend, resend-matching")
	}
	switch args[0] {
	case "list":
		return c.deliveriesList(args[1:], false)
	case "resend-matching":
		return c.deliveriesList(args[1:], true)
	case "show":
		return c.deliveriesShow(args[1:])
	case "resend":
		return c.deliveriesResend(args[1:])
	default:
		return usagef("unknown deliveries subcommand %q", args[0])
	}
}

// deliveriesList lists an app's deliveries by filter, or resends them all.
func (c *cli) deliveriesList(args []string, resend bool) error {
	name := "deliveries list"
	if resend {
		name = "deliveries resend-matching"
	}
	fs := c.flags(name)
	app := fs.Int64("app", 0, "app id (required for resend-matching)")
	status := fs.String("status", "", "pending, retrying, delivered, abandoned, dead_letter or skipped")
	event := fs.String("event", "", "event type")
	from := fs.String("from", "", "created at or after (ISO 8601)")
	to := fs.String("to", "", "created before (ISO 8601)")
	limit := fs.Int("limit", 100, "most deliveries to list (max 1000)")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("%s takes no arguments, got %q", name, rest)
	}
	if resend && *app <= 0 {
		return usagef("deliveries resend-matching needs --app")
	}
	q := url.Values{}
	for k, v := range map[string]string{"status": *status, "event": *event, "from": *from, "to": *to} {
		if v != "" {
			q.Set(k, v)
		}
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	if resend {
		return c.resendMatching(api, *app, q)
	}
	if *app > 0 {
		q.Set("app_id", strconv.FormatInt(*app, 10))
	}
	q.Set("limit", strconv.Itoa(*limit))
	data, err := api.do(c.ctx, "GET", "/admin/v1/deliveries?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	var page struct {
		Deliveries []deliveryView `json:"deliveries"`
	}
	if err := decode(data, &page); err != nil {
		return err
	}
	t := newTable(c.stdout, "DELIVERY_ID", "APP", "EVENT", "STATUS", "ATTEMPTS", "LAST_STATUS", "NEXT_ATTEMPT", "CREATED")
	for _, d := range page.Deliveries {
		t.row(d.DeliveryID, strconv.FormatInt(d.AppID, 10), d.Event, d.Status, strconv.Itoa(d.Attempts), orDash(d.LastStatusCode), orDash(d.NextAttemptAt), d.CreatedAt)
	}
	return t.flush()
}

// resendMatching resends every delivery of app the filters q select: the
// server examines a bounded number per call and answers next_after, so it
// calls again from there until none is left, and prints the total (with
// --json as {"queued": n}, the shape of one call's answer).
func (c *cli) resendMatching(api *client, app int64, q url.Values) error {
	total := 0
	for {
		data, err := api.do(c.ctx, "POST", fmt.Sprintf("/admin/v1/apps/%d/deliveries/resend?%s", app, q.Encode()), nil)
		if err != nil {
			return err
		}
		var out struct {
			Queued    int    `json:"queued"`
			NextAfter string `json:"next_after"`
		}
		if err := decode(data, &out); err != nil {
			return err
		}
		total += out.Queued
		if out.NextAfter == "" {
			break
		}
		q.Set("after", out.NextAfter)
	}
	if c.g.json {
		return printJSON(c.stdout, json.RawMessage(fmt.Sprintf(`{"queued":%d}`, total)))
	}
	fmt.Fprintf(c.stdout, "queued=%d\n", total)
	return nil
}

func (c *cli) deliveriesShow(args []string) error {
	fs := c.flags("deliveries show")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("deliveries show needs one DELIVERY_ID")
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	data, err := api.do(c.ctx, "GET", "/admin/v1/deliveries/"+url.PathEscape(rest[0]), nil)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	var d deliveryView
	if err := decode(data, &d); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "delivery_id=%s app=%d event=%s status=%s attempts=%d next_attempt=%s\n", d.DeliveryID, d.AppID, d.Event, d.Status, d.Attempts, orDash(d.NextAttemptAt))
	for _, a := range d.AttemptLog {
		fmt.Fprintf(c.stdout, "attempt=%d at=%s status=%s latency_ms=%d outcome=%s error=%s\n", a.Attempt, a.At, orDash(a.StatusCode), a.LatencyMS, a.Outcome, orDash(a.Error))
	}
	payload, err := compact(d.Payload)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "payload %s\n", payload)
	return nil
}

func (c *cli) deliveriesResend(args []string) error {
	fs := c.flags("deliveries resend")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("deliveries resend needs one DELIVERY_ID")
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	data, err := api.do(c.ctx, "POST", "/admin/v1/deliveries/"+url.PathEscape(rest[0])+"/resend", nil)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	var out struct {
		Queued bool `json:"queued"`
	}
	if err := decode(data, &out); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "delivery_id=%s queued=%t\n", rest[0], out.Queued)
	return nil
}

// appsWebhook sets an app's webhook URL and subscription.
func (c *cli) appsWebhook(args []string) error {
	fs := c.flags("apps webhook")
	webhookURL := fs.String("url", "", "webhook URL (public https); \"none\" removes it")
	var events stringList
	fs.Var(&events, "event", "subscribed event or prefix wildcard such as health.report.* (repeatable; none = all)")
	all := fs.Bool("all-events", false, "subscribe to every event (clears the event list)")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("apps webhook needs one APP_ID")
	}
	id, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil || id <= 0 {
		return usagef("APP_ID must be a positive integer, got %q", rest[0])
	}
	body := map[string]any{}
	switch *webhookURL {
	case "":
	case "none":
		body["webhook_url"] = nil
	default:
		body["webhook_url"] = *webhookURL
	}
	if len(events) > 0 {
		body["webhook_events"] = []string(events)
	} else if *all {
		body["webhook_events"] = []string{}
	}
	if len(body) == 0 {
		return usagef("apps webhook needs --url, --event or --all-events")
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	if _, err := api.do(c.ctx, "PATCH", fmt.Sprintf("/admin/v1/apps/%d", id), body); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "app_id=%d webhook updated\n", id)
	return nil
}

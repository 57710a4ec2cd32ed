package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The endpoints commands manage one app's webhook endpoints through the
// partner API (/open/v1/webhooks/endpoints), signed with the app's own
// credentials by scheme H: the partner's, not an operator's, action.

// partnerCreds are the app credentials the endpoints commands sign with.
type partnerCreds struct{ key, secret string }

// signH signs req by scheme H: HMAC-SHA-256 with the app secret over
// METHOD, URI, timestamp, nonce and the body's SHA-256, one per line; a
// fresh nonce makes every request single-use.
func (p partnerCreds) signH(req *http.Request, body []byte) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	n := make([]byte, 16)
	_, _ = rand.Read(n)
	nonce := hex.EncodeToString(n)
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, []byte(p.secret))
	m.Write([]byte(strings.ToUpper(req.Method) + "\n" + req.URL.RequestURI() + "\n" + ts + "\n" + nonce + "\n" + hex.EncodeToString(sum[:])))
	req.Header.Set("X-App-Key", p.key)
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Nonce", nonce)
	req.Header.Set("X-Signature", hex.EncodeToString(m.Sum(nil)))
}

// endpointView is an endpoint as the partner API shows it.
type endpointView struct {
	EndpointID           int64    `json:"endpoint_id"`
	Default              bool     `json:"default"`
	URL                  string   `json:"url"`
	Description          string   `json:"description"`
	Events               []string `json:"events"`
	Enabled              bool     `json:"enabled"`
	SigningSecret        string   `json:"signing_secret"`
	PendingSecret        bool     `json:"pending_secret"`
	UpdatedAt            string   `json:"updated_at"`
	WebhookSecret        string   `json:"webhook_secret"`
	PendingWebhookSecret string   `json:"pending_webhook_secret"`
}

const endpointsUsage = "endpoints needs a subcommand: list, show, create, update, delete, rotate-secret, activate-secret, test"

// endpointsFlags are the endpoints commands' flags, parsed.
type endpointsFlags struct {
	sub                                  string
	url, description                     string
	events                               stringList
	allEvents, disabled, enable, disable bool
	describe                             bool // --description given, even empty
	rest                                 []string
}

func (c *cli) endpoints(args []string) error {
	if len(args) == 0 {
		return usagef(endpointsUsage)
	}
	fs := c.flags("endpoints " + args[0])
	f := endpointsFlags{sub: args[0]}
	appKey := fs.String("app-key", c.env("PLATFORM_APP_KEY"), "the app's app_key (env PLATFORM_APP_KEY)")
	appSecret := fs.String("app-secret", c.env("PLATFORM_APP_SECRET"), "the app's app_secret (env PLATFORM_APP_SECRET)")
	fs.StringVar(&f.url, "url", "", "the endpoint's public https URL")
	fs.Var(&f.events, "event", "subscribed event or prefix wildcard such as health.report.* (repeatable)")
	fs.BoolVar(&f.allEvents, "all-events", false, "update: subscribe to every event")
	fs.BoolVar(&f.disabled, "disabled", false, "create: add the endpoint without deliveries until enabled")
	fs.BoolVar(&f.enable, "enable", false, "update: enable the endpoint")
	fs.BoolVar(&f.disable, "disable", false, "update: disable the endpoint (no new deliveries)")
	fs.StringVar(&f.description, "description", "", "create, update: what the endpoint is for (at most 256 characters; update with \"\" clears it)")
	rest, err := parse(fs, args[1:], true)
	if err != nil {
		return err
	}
	f.rest = rest
	fs.Visit(func(fl *flag.Flag) { f.describe = f.describe || fl.Name == "description" })
	if *appKey == "" || *appSecret == "" {
		return usagef("endpoints needs the app's credentials: --app-key and --app-secret (or PLATFORM_APP_KEY and PLATFORM_APP_SECRET)")
	}
	api, err := newClient(c.g.server, "")
	if err != nil {
		return err
	}
	api.sign = partnerCreds{key: *appKey, secret: *appSecret}.signH
	switch f.sub {
	case "list":
		return c.endpointsList(api, f)
	case "show", "delete", "activate-secret", "test", "rotate-secret":
		return c.endpointsAction(api, f)
	case "create":
		return c.endpointsCreate(api, f)
	case "update":
		return c.endpointsUpdate(api, f)
	}
	return usagef("unknown endpoints subcommand %q; %s", f.sub, endpointsUsage)
}

const endpointsBase = "/open/v1/webhooks/endpoints"

// endpointPath is the path of the one endpoint the subcommand names.
func (f endpointsFlags) endpointPath() (string, error) {
	if len(f.rest) != 1 {
		return "", usagef("endpoints %s needs ENDPOINT_ID (0 is the default endpoint)", f.sub)
	}
	if n, err := strconv.ParseInt(f.rest[0], 10, 64); err != nil || n < 0 {
		return "", usagef("ENDPOINT_ID must be a non-negative integer, got %q", f.rest[0])
	}
	return endpointsBase + "/" + f.rest[0], nil
}

func (c *cli) endpointsList(api *client, f endpointsFlags) error {
	if len(f.rest) != 0 {
		return usagef("endpoints list takes no arguments")
	}
	data, err := api.do(c.ctx, "GET", endpointsBase, nil)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	var l struct {
		Endpoints []endpointView `json:"endpoints"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return fmt.Errorf("unexpected response data: %w", err)
	}
	t := newTable(c.stdout, "ID", "URL", "EVENTS", "ENABLED", "SIGNED WITH", "PENDING SECRET", "DESCRIPTION")
	for _, e := range l.Endpoints {
		events := strings.Join(e.Events, ",")
		if events == "" {
			events = "(all)"
		}
		t.row(strconv.FormatInt(e.EndpointID, 10), e.URL, events, strconv.FormatBool(e.Enabled), e.SigningSecret, strconv.FormatBool(e.PendingSecret), e.Description)
	}
	return t.flush()
}

// endpointsAction runs a subcommand on one endpoint that takes no body.
func (c *cli) endpointsAction(api *client, f endpointsFlags) error {
	path, err := f.endpointPath()
	if err != nil {
		return err
	}
	method := "POST"
	switch f.sub {
	case "show":
		method = "GET"
	case "delete":
		method = "DELETE"
	case "activate-secret":
		path += "/secret/activate"
	case "rotate-secret":
		path += "/secret/rotate"
		fmt.Fprintln(c.stderr, "note: the pending webhook secret is shown only once; the current one signs until you activate it")
	case "test":
		path += "/test"
	}
	return c.printWith(api, method, path, nil)
}

func (c *cli) endpointsCreate(api *client, f endpointsFlags) error {
	if len(f.rest) != 0 || f.url == "" {
		return usagef("endpoints create needs --url URL")
	}
	body := map[string]any{"url": f.url}
	if len(f.events) > 0 {
		body["events"] = []string(f.events)
	}
	if f.disabled {
		body["enabled"] = false
	}
	if f.description != "" {
		body["description"] = f.description
	}
	fmt.Fprintln(c.stderr, "note: the endpoint's webhook_secret is shown only once; store it now")
	return c.printWith(api, "POST", endpointsBase, body)
}

func (c *cli) endpointsUpdate(api *client, f endpointsFlags) error {
	path, err := f.endpointPath()
	if err != nil {
		return err
	}
	if f.enable && f.disable {
		return usagef("endpoints update takes --enable or --disable, not both")
	}
	if f.allEvents && len(f.events) > 0 {
		return usagef("endpoints update takes --event or --all-events, not both")
	}
	body := map[string]any{}
	if f.url != "" {
		body["url"] = f.url
	}
	if len(f.events) > 0 {
		body["events"] = []string(f.events)
	}
	if f.allEvents {
		body["events"] = []string{}
	}
	if f.enable || f.disable {
		body["enabled"] = f.enable
	}
	if f.describe {
		body["description"] = f.description
	}
	if len(body) == 0 {
		return usagef("endpoints update needs --url, --event, --all-events, --enable, --disable or --description")
	}
	return c.printWith(api, "PATCH", path, body)
}

// printWith sends one request with api and prints its data as JSON.
func (c *cli) printWith(api *client, method, path string, body any) error {
	data, err := api.do(c.ctx, method, path, body)
	if err != nil {
		return err
	}
	if len(data) == 0 || string(data) == "null" {
		fmt.Fprintln(c.stdout, "ok")
		return nil
	}
	return printJSON(c.stdout, data)
}

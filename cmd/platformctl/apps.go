package main

import (
	"fmt"
	"strconv"
	"strings"
)

// appView is an app as GET /admin/v1/apps shows it.
type appView struct {
	AppID         int64    `json:"app_id"`
	Name          string   `json:"name"`
	AppKey        string   `json:"app_key"`
	Environment   string   `json:"environment"`
	WebhookURL    string   `json:"webhook_url"`
	WebhookEvents []string `json:"webhook_events"`
	CreatedAt     string   `json:"created_at"`
	UpdatedAt     string   `json:"updated_at"`
}

// credentials are what app creation and secret rotation return, once.
type credentials struct {
	AppID         int64  `json:"app_id"`
	AppKey        string `json:"app_key"`
	AppSecret     string `json:"app_secret"`
	WebhookSecret string `json:"webhook_secret"`
	Environment   string `json:"environment"`
}

const secretsNote = "note: secrets are shown only once; store them now"

// stringList is a repeatable string flag.
type stringList []string

// String joins the values with commas.
func (s *stringList) String() string { return strings.Join(*s, ",") }

// Set appends one value.
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func (c *cli) apps(args []string) error {
	if len(args) == 0 {
		return usagef("apps needs a subcommand: create, list, show, rotate-secret, webhook, review")
	}
	switch args[0] {
	case "create":
		return c.appsCreate(args[1:])
	case "list":
		return c.appsList(args[1:])
	case "show":
		return c.appsShow(args[1:])
	case "rotate-secret":
		return c.appsRotateSecret(args[1:])
	case "webhook":
		return c.appsWebhook(args[1:])
	case "review":
		return c.appsReview(args[1:])
	default:
		return usagef("unknown apps subcommand %q", args[0])
	}
}

func (c *cli) appsCreate(args []string) error {
	fs := c.flags("apps create")
	name := fs.String("name", "", "app name (required)")
	webhookURL := fs.String("webhook-url", "", "URL receiving webhooks")
	var webhookEvents stringList
	fs.Var(&webhookEvents, "webhook-event", "event type delivered to the webhook (repeatable)")
	environment := fs.String("environment", "", "sandbox or production (server default: sandbox)")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("apps create takes no arguments, got %q", rest)
	}
	if strings.TrimSpace(*name) == "" {
		return usagef("apps create needs --name")
	}
	if e := *environment; e != "" && e != "sandbox" && e != "production" {
		return usagef("--environment must be sandbox or production, got %q", e)
	}
	body := map[string]any{"name": *name}
	if *webhookURL != "" {
		body["webhook_url"] = *webhookURL
	}
	if len(webhookEvents) > 0 {
		body["webhook_events"] = []string(webhookEvents)
	}
	if *environment != "" {
		body["environment"] = *environment
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	data, err := api.do(c.ctx, "POST", "/admin/v1/apps", body)
	if err != nil {
		return err
	}
	if err := c.printCredentials(data, true); err != nil {
		return err
	}
	fmt.Fprintln(c.stderr, secretsNote)
	return nil
}

func (c *cli) printCredentials(data []byte, created bool) error {
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	var cr credentials
	if err := decode(data, &cr); err != nil {
		return err
	}
	t := newTable(c.stdout)
	t.row("app_id", strconv.FormatInt(cr.AppID, 10))
	if created {
		t.row("app_key", cr.AppKey)
	}
	t.row("app_secret", cr.AppSecret)
	if created {
		t.row("webhook_secret", cr.WebhookSecret)
		t.row("environment", cr.Environment)
	}
	return t.flush()
}

func (c *cli) appsList(args []string) error {
	fs := c.flags("apps list")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("apps list takes no arguments, got %q", rest)
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	data, err := api.do(c.ctx, "GET", "/admin/v1/apps", nil)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	var out struct {
		Apps []appView `json:"apps"`
	}
	if err := decode(data, &out); err != nil {
		return err
	}
	t := newTable(c.stdout, "ID", "NAME", "ENVIRONMENT", "APP_KEY", "WEBHOOK_URL")
	for _, a := range out.Apps {
		t.row(strconv.FormatInt(a.AppID, 10), a.Name, a.Environment, a.AppKey, a.WebhookURL)
	}
	return t.flush()
}

// appID parses the one APP_ID argument of a command.
func appID(cmd string, rest []string) (int64, error) {
	if len(rest) != 1 {
		return 0, usagef("%s needs exactly one APP_ID argument", cmd)
	}
	id, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%s: APP_ID must be a positive integer, got %q", cmd, rest[0])
	}
	return id, nil
}

func (c *cli) appsShow(args []string) error {
	fs := c.flags("apps show")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	id, err := appID("apps show", rest)
	if err != nil {
		return err
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	data, err := api.do(c.ctx, "GET", "/admin/v1/apps/"+strconv.FormatInt(id, 10), nil)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	var a appView
	if err := decode(data, &a); err != nil {
		return err
	}
	t := newTable(c.stdout)
	t.row("app_id", strconv.FormatInt(a.AppID, 10))
	t.row("name", a.Name)
	t.row("environment", a.Environment)
	t.row("app_key", a.AppKey)
	t.row("webhook_url", a.WebhookURL)
	t.row("webhook_events", strings.Join(a.WebhookEvents, ","))
	t.row("created_at", a.CreatedAt)
	t.row("updated_at", a.UpdatedAt)
	return t.flush()
}

func (c *cli) appsRotateSecret(args []string) error {
	fs := c.flags("apps rotate-secret")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	id, err := appID("apps rotate-secret", rest)
	if err != nil {
		return err
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	data, err := api.do(c.ctx, "POST", "/admin/v1/apps/"+strconv.FormatInt(id, 10)+"/rotate-secret", nil)
	if err != nil {
		return err
	}
	if err := c.printCredentials(data, false); err != nil {
		return err
	}
	fmt.Fprintln(c.stderr, secretsNote)
	return nil
}

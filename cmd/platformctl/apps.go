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
	Scopes        []string `json:"scopes"`
	Suspended     bool     `json:"suspended"`
	Reason        string   `json:"suspension_reason"`
	RequireH      bool     `json:"require_scheme_h"`
	SecretPending bool     `json:"webhook_secret_pending"`
	CreatedAt     string   `json:"created_at"`
	UpdatedAt     string   `json:"updated_at"`
	// DeveloperID and Purpose are set for apps created in the developer
	// portal, so an operator sees whose app it is and what it is for.
	DeveloperID int64  `json:"developer_id"`
	Purpose     string `json:"purpose"`
}

// credentials are what app creation and secret rotation return, once.
type credentials struct {
	AppID         int64    `json:"app_id"`
	AppKey        string   `json:"app_key"`
	AppSecret     string   `json:"app_secret"`
	WebhookSecret string   `json:"webhook_secret"`
	Environment   string   `json:"environment"`
	Scopes        []string `json:"scopes"`
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
		return usagef("apps needs a subcommand: create, list, show, rotate-secret, webhook, review, scopes, auth, suspend, resume, webhook-secret")
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
	case "scopes":
		return c.appsScopes(args[1:])
	case "auth":
		return c.appsAuth(args[1:])
	case "suspend":
		return c.appsSuspend(args[1:])
	case "resume":
		return c.appsResume(args[1:])
	case "webhook-secret":
		return c.appsWebhookSecret(args[1:])
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
	scopes := fs.String("scopes", "", "comma-separated API scopes (default set: channel_users,health_reports,orders,webhooks)")
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
	if list := splitScopes(*scopes); len(list) > 0 {
		body["scopes"] = list
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
		if len(cr.Scopes) > 0 {
			t.row("scopes", strings.Join(cr.Scopes, ","))
		}
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
	var page struct {
		Apps []appView `json:"apps"`
	}
	return c.adminList("/admin/v1/apps", nil, &page, func() error {
		t := newTable(c.stdout, "ID", "NAME", "ENVIRONMENT", "APP_KEY", "WEBHOOK_URL")
		for _, a := range page.Apps {
			t.row(strconv.FormatInt(a.AppID, 10), a.Name, a.Environment, a.AppKey, a.WebhookURL)
		}
		return t.flush()
	})
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
	t.row("scopes", strings.Join(a.Scopes, ","))
	t.row("suspended", strconv.FormatBool(a.Suspended))
	if a.Suspended {
		t.row("suspension_reason", a.Reason)
	}
	t.row("require_scheme_h", strconv.FormatBool(a.RequireH))
	t.row("webhook_secret_pending", strconv.FormatBool(a.SecretPending))
	if a.DeveloperID != 0 {
		t.row("developer_id", strconv.FormatInt(a.DeveloperID, 10))
	}
	if a.Purpose != "" {
		t.row("purpose", a.Purpose)
	}
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

// splitScopes reads a comma-separated scope list; blanks are dropped.
func splitScopes(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (c *cli) appsScopes(args []string) error {
	fs := c.flags("apps scopes")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 2 {
		return usagef("apps scopes needs APP_ID and a comma-separated scope list (or \"default\")")
	}
	id, err := appID("apps scopes", rest[:1])
	if err != nil {
		return err
	}
	scopes := splitScopes(rest[1])
	if rest[1] == "default" {
		scopes = []string{}
	}
	return c.print("PUT", "/admin/v1/apps/"+strconv.FormatInt(id, 10)+"/scopes", map[string]any{"scopes": scopes})
}

// appsAuth sets which signatures the app's partner routes accept:
// "scheme-h" requires scheme H on every route, "default" accepts scheme M
// (the spec's) or scheme H.
func (c *cli) appsAuth(args []string) error {
	fs := c.flags("apps auth")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 2 || (rest[1] != "scheme-h" && rest[1] != "default") {
		return usagef("apps auth needs APP_ID and scheme-h (require scheme H on every route) or default (scheme M or H)")
	}
	id, err := appID("apps auth", rest[:1])
	if err != nil {
		return err
	}
	return c.print("PUT", "/admin/v1/apps/"+strconv.FormatInt(id, 10)+"/authentication", map[string]any{"require_scheme_h": rest[1] == "scheme-h"})
}

func (c *cli) appsSuspend(args []string) error {
	fs := c.flags("apps suspend")
	reason := fs.String("reason", "", "why, for operators (at most 500 characters)")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	id, err := appID("apps suspend", rest)
	if err != nil {
		return err
	}
	return c.print("POST", "/admin/v1/apps/"+strconv.FormatInt(id, 10)+"/suspend", map[string]any{"reason": *reason})
}

func (c *cli) appsResume(args []string) error {
	fs := c.flags("apps resume")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	id, err := appID("apps resume", rest)
	if err != nil {
		return err
	}
	return c.print("POST", "/admin/v1/apps/"+strconv.FormatInt(id, 10)+"/resume", nil)
}

func (c *cli) appsWebhookSecret(args []string) error {
	fs := c.flags("apps webhook-secret")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 2 || (rest[1] != "rotate" && rest[1] != "activate") {
		return usagef("apps webhook-secret needs APP_ID and rotate or activate")
	}
	id, err := appID("apps webhook-secret", rest[:1])
	if err != nil {
		return err
	}
	if rest[1] == "rotate" {
		fmt.Fprintln(c.stderr, "note: the pending webhook secret is shown only once; the current one signs until you activate it")
	}
	return c.print("POST", "/admin/v1/apps/"+strconv.FormatInt(id, 10)+"/webhook-secret/"+rest[1], nil)
}

// Command platformctl is the operator CLI of the partner open platform: an
// HTTP client of the server's admin API (/admin/v1/...).
//
// Run `platformctl help` for the commands and flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

const usageText = `Usage: platformctl [global flags] <command> [arguments]

Operator CLI for the partner open platform's admin API.

Commands:
  apps create --name NAME [--webhook-url URL] [--webhook-event EVENT]... [--environment sandbox|production]
              [--scopes SCOPE,SCOPE...]
                            register a partner app; prints its credentials, whose secrets are shown once;
                            without --scopes it gets channel_users,health_reports,orders,webhooks
  apps list                 list apps: id, name, environment, app_key, webhook_url
  apps show APP_ID          show one app
  apps rotate-secret APP_ID issue a new app secret; prints it once
  apps webhook APP_ID [--url URL|none] [--event EVENT]... [--all-events]
                            set where and which webhooks the app receives
  apps scopes APP_ID SCOPE,SCOPE...|default
                            replace the app's API scopes (channel_users, orders, health_reports,
                            daily_report, webhooks, benefits, plugin)
  apps auth APP_ID scheme-h|default
                            require scheme H on every partner route (scheme M refused, 401), or accept
                            scheme M (the spec's default) and scheme H
  apps suspend APP_ID [--reason TEXT] | apps resume APP_ID
                            refuse the app's calls (403 APP_SUSPENDED) and hold its webhooks; resume
  apps webhook-secret APP_ID rotate|activate
                            issue a pending webhook secret (printed once; the old one signs until
                            activate), then make it the signing secret
  deliveries list [--app ID] [--status S] [--event E] [--from T] [--to T] [--limit N]
                            the webhook delivery log
  deliveries show DELIVERY_ID
                            one delivery with every attempt and its payload
  deliveries resend DELIVERY_ID
                            queue a delivery again (same id, same body, fresh retry schedule)
  deliveries resend-matching --app ID [--status S] [--event E] [--from T] [--to T]
                            resend every delivery of the app the filters select
  apps review APP_ID --decision approve|reject [--notes TEXT]
                            onboarding review (final: a second decision is 409); approval prints the
                            production app's credentials once
  goods create --code CODE --name NAME | goods list | goods rename CODE --name NAME
  goods deactivate CODE | goods activate CODE
                            the goods catalog partners order from
  orders list [--app ID] [--status S] | orders show CODE | orders approve CODE
  orders reject CODE [--reason TEXT] | orders ship CODE --logistics-company C --tracking-number N
                            purchase orders and their lifecycle
  history STREAM [--from REVISION] [--limit N] [--reveal --reason TEXT]
                            print one stream's events in order (revision, time, type, position, data);
                            personal fields read "[redacted]" unless an auditor reveals them with a
                            reason, which is recorded as an audit fact
  events [--after-commit N] [--after-prepare N] [--limit N] [--follow] [--reveal --reason TEXT]
                            page through the global log after a position; --follow keeps
                            polling every second until interrupted (Ctrl-C)
  operators create --name NAME --role admin|auditor|support
                            create a named operator; prints its token once
  operators list | operators revoke OPERATOR_ID
                            list named operators; revoke one's token for good
  users erase OPEN_USER_ID --reason R
                            erase a channel user (admin): destroys their data key, drops
                            them from the read models, frees their channel_user_id
  keys rotate               re-seal every personal-data key with the current master key (admin;
                            after restarting the nodes with the new key and the old one as previous)
  audit [--actor A] [--action A] [--subject STREAM] [--from T] [--to T] [--after SEQ] [--limit N]
                            list audit facts: reveals of personal data, partner report pulls
                            and erasures (--action user.erased)
  erasures [--app ID] [--after SEQ] [--limit N]
                            erasures the app that held the person has not acknowledged yet
                            (the partner acknowledges the user.erased webhook)
  providers list [--app APP_ID]
                            service providers (contacts redacted)
  providers review PROVIDER_ID --decision approve|reject [--notes TEXT]
                            decide a pending provider's review (final: a second decision is 409)
  developers list [--status pending_review|approved|rejected] | developers show DEVELOPER_ID
                            developer accounts and their qualification review (the ops pages' queue)
  developers review DEVELOPER_ID --decision approve|reject [--notes TEXT]
                            decide a developer's qualification (admin; --notes required to reject); not
                            final, unlike apps and providers: a rejected developer may be approved later;
                            the same decision with the same notes again is 409; the developer is mailed
  outbox [--status queued|retrying|sent|failed]
                            the developer portal's outgoing mail, newest first, with each body
                            (sign-up and password-reset links: admin role only)
  backup -o FILE            save a running embedded node's data directory (log, personal-data keys,
                            replay guard, checkpoints) as a consistent tar file, checked against its
                            manifest (admin; not the master key: keep it apart)
  projections               list projections: name, position, events applied, rate, caught up, last error
  rebuild NAME [--timeout DURATION]
                            empty a projection and replay the log into it, printing progress
                            every 500ms until it has caught up (default timeout 30m)
  endpoints list | endpoints show|delete|rotate-secret|activate-secret|test ENDPOINT_ID
  endpoints create --url URL [--event EVENT]... [--disabled] [--description TEXT]
  endpoints update ENDPOINT_ID [--url URL] [--event EVENT]... [--all-events] [--enable|--disable]
                   [--description TEXT]
                            an app's webhook endpoints, as the partner (scheme H with --app-key and
                            --app-secret, env PLATFORM_APP_KEY and PLATFORM_APP_SECRET); endpoint 0 is
                            the default one (webhook_url, signed with the app's webhook secret), the
                            others sign with their own secret, printed once by create and rotate-secret
  replay start --event EVENT... (--since TIME | --cursor CURSOR) [--until TIME] [--endpoint ID]
  replay status REPLAY_ID | replay cancel REPLAY_ID
                            deliver an app's past webhook events again to one of its endpoints (default
                            0), from a time or a feed cursor; follow or stop it; as the partner, signed
                            like the endpoints commands (--app-key/--app-secret or the env variables)
  help                      show this text

--limit is the most events to print (default 0: all of them).

Global flags (before or after the command):
  --server URL    platform base URL (env PLATFORM_URL, default http://127.0.0.1:8080)
  --token TOKEN   admin token (env PLATFORM_ADMIN_TOKEN; if unset, read from <data-dir>/admin.token)
  --data-dir DIR  data directory of an embedded server (env PLATFORM_DATA_DIR, default ./data)
  --json          print the response data as JSON; history, events and rebuild
                  print one JSON object per line

Exit status: 0 on success, 1 when a request fails, 2 on a usage error.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run executes one command line and returns the process exit status; SIGINT
// and SIGTERM cancel it.
func run(args []string, stdout, stderr io.Writer, env func(string) string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr, env)
}

// globals are the flags every command accepts.
type globals struct {
	server  string
	token   string
	dataDir string
	json    bool
}

// register binds the global flags to fs, defaulting to their current values
// so flags given before the command survive the command's own parse.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.server, "server", g.server, "platform base URL (env PLATFORM_URL)")
	fs.StringVar(&g.token, "token", g.token, "admin token (env PLATFORM_ADMIN_TOKEN)")
	fs.StringVar(&g.dataDir, "data-dir", g.dataDir, "data directory holding admin.token (env PLATFORM_DATA_DIR)")
	fs.BoolVar(&g.json, "json", g.json, "print the response data as JSON")
}

// cli is one invocation: where output goes, the global flags and the API client.
type cli struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	g      globals
	client *client
	getenv func(string) string
}

// env reads an environment variable, trimmed.
func (c *cli) env(name string) string {
	if c.getenv == nil {
		return ""
	}
	return strings.TrimSpace(c.getenv(name))
}

// usageError is a command line the CLI cannot run; it exits 2 with the usage text.
type usageError struct{ msg string }

// Error returns the message.
func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// commands maps each command (group) name to its runner.
var commands = map[string]func(c *cli, args []string) error{
	"apps":        (*cli).apps,
	"history":     (*cli).history,
	"events":      (*cli).events,
	"projections": (*cli).projections,
	"rebuild":     (*cli).rebuild,
	"deliveries":  (*cli).deliveries,
	"goods":       (*cli).goods,
	"orders":      (*cli).orders,
	"operators":   (*cli).operators,
	"audit":       (*cli).audit,
	"erasures":    (*cli).erasures,
	"users":       (*cli).users,
	"keys":        (*cli).keys,
	"outbox":      (*cli).outbox,
	"backup":      (*cli).backup,
	"endpoints":   (*cli).endpoints,
	"providers":   (*cli).providers,
	"developers":  (*cli).developers,
	"replay":      (*cli).replay,
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) int {
	c := &cli{ctx: ctx, stdout: stdout, stderr: stderr, getenv: env, g: globals{
		server:  envOr(env, "PLATFORM_URL", "http://127.0.0.1:8080"),
		token:   strings.TrimSpace(env("PLATFORM_ADMIN_TOKEN")),
		dataDir: envOr(env, "PLATFORM_DATA_DIR", "./data"),
	}}
	fs := c.flags("platformctl")
	rest, err := parse(fs, args, false)
	if err == nil {
		switch {
		case len(rest) == 0:
			err = usagef("no command given")
		case rest[0] == "help":
			fmt.Fprint(stdout, usageText)
			return 0
		case commands[rest[0]] == nil:
			err = usagef("unknown command %q", rest[0])
		default:
			err = commands[rest[0]](c, rest[1:])
		}
	}
	return c.exit(err)
}

// exit reports err on stderr and chooses the exit status.
func (c *cli) exit(err error) int {
	var usage *usageError
	var api *APIError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(c.stdout, usageText)
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(c.stderr, "platformctl: %s\n\n%s", usage.msg, usageText)
		return 2
	case errors.As(err, &api):
		c.printAPIError(api)
		return 1
	case c.ctx.Err() != nil:
		fmt.Fprintln(c.stderr, "platformctl: interrupted")
		return 130
	default:
		fmt.Fprintf(c.stderr, "error: %s\n", err)
		return 1
	}
}

// printAPIError prints the envelope's code and message, the field errors of
// a VALIDATION_ERROR one per line (sorted), and the request id if any.
func (c *cli) printAPIError(e *APIError) {
	fmt.Fprintf(c.stderr, "error: %s: %s\n", e.Code, e.Message)
	fields := make([]string, 0, len(e.Errors))
	for f := range e.Errors {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		for _, msg := range e.Errors[f] {
			fmt.Fprintf(c.stderr, "  %s: %s\n", f, msg)
		}
	}
	if e.RequestID != "" {
		fmt.Fprintf(c.stderr, "http status %d, request id %s\n", e.Status, e.RequestID)
	} else {
		fmt.Fprintf(c.stderr, "http status %d\n", e.Status)
	}
}

// flags returns a flag set that accepts the global flags and reports errors
// to the caller instead of printing them.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	c.g.register(fs)
	return fs
}

// parse parses args with fs. With interleaved, flags may follow positional
// arguments (`history user-1 --limit 5`); everything after "--" is positional.
// Without it, parsing stops at the first positional argument (the command).
func parse(fs *flag.FlagSet, args []string, interleaved bool) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if !interleaved || len(rest) == 0 {
			return append(positional, rest...), nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// api returns the client, resolving the admin token on first use.
func (c *cli) api() (*client, error) {
	if c.client != nil {
		return c.client, nil
	}
	token := strings.TrimSpace(c.g.token)
	if token == "" {
		path := filepath.Join(c.g.dataDir, "admin.token")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("no admin token: pass --token or set PLATFORM_ADMIN_TOKEN, or point --data-dir at the server's data directory (%v)", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return nil, fmt.Errorf("no admin token: %s is empty", path)
		}
	}
	cl, err := newClient(c.g.server, token)
	if err != nil {
		return nil, err
	}
	c.client = cl
	return cl, nil
}

func envOr(env func(string) string, name, def string) string {
	if v := strings.TrimSpace(env(name)); v != "" {
		return v
	}
	return def
}

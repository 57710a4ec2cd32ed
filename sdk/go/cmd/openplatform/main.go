// Command openplatform is the partner's command-line tool for the local
// development loop: `listen` pulls the app's webhook events from the
// platform's event feed and forwards each, signed as the platform signs
// webhooks, to a local URL (no public endpoint, no inbound connection);
// `trigger` causes a sample event of a given type for a sandbox app.
//
// Credentials come from the environment (OPENPLATFORM_BASE_URL,
// OPENPLATFORM_APP_ID, OPENPLATFORM_APP_KEY, OPENPLATFORM_APP_SECRET) or
// the flags of the same names; see docs/local-development.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	partneropen "github.com/healthtech/partner-open-platform/sdk/go"
)

const usage = `usage: openplatform [credentials] <command> [flags]

commands:
  listen --forward-to URL   forward the app's webhook events to a local URL
  trigger EVENT_TYPE        cause a sample webhook event (sandbox apps)

credentials (flags, or the environment variables in capitals):
  --base-url      OPENPLATFORM_BASE_URL    the platform, e.g. https://sandbox.example.com
  --app-id        OPENPLATFORM_APP_ID
  --app-key       OPENPLATFORM_APP_KEY
  --app-secret    OPENPLATFORM_APP_SECRET  (prefer the environment)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command, for tests: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("openplatform", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.Usage = func() { fmt.Fprint(stderr, usage) }
	base := global.String("base-url", os.Getenv("OPENPLATFORM_BASE_URL"), "")
	appID := global.String("app-id", os.Getenv("OPENPLATFORM_APP_ID"), "")
	appKey := global.String("app-key", os.Getenv("OPENPLATFORM_APP_KEY"), "")
	appSecret := global.String("app-secret", os.Getenv("OPENPLATFORM_APP_SECRET"), "")
	if err := global.Parse(args); err != nil {
		return 2
	}
	if global.NArg() == 0 {
		global.Usage()
		return 2
	}
	if *base == "" || *appID == "" || *appKey == "" || *appSecret == "" {
		fmt.Fprintln(stderr, "openplatform: set OPENPLATFORM_BASE_URL, OPENPLATFORM_APP_ID, OPENPLATFORM_APP_KEY and OPENPLATFORM_APP_SECRET (or the flags)")
		return 2
	}
	client, err := partneropen.NewClient(partneropen.WithBaseURL(*base), partneropen.WithCredentials(*appID, *appKey, *appSecret))
	if err != nil {
		fmt.Fprintln(stderr, "openplatform:", err)
		return 2
	}
	cmd, rest := global.Arg(0), global.Args()[1:]
	switch cmd {
	case "listen":
		err = listen(ctx, client, *appID, rest, stdout, stderr)
	case "trigger":
		err = trigger(ctx, client, rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "openplatform: unknown command %q\n", cmd)
		global.Usage()
		return 2
	}
	var usageErr usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usageErr):
		fmt.Fprintln(stderr, "openplatform:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "openplatform:", err)
		return 1
	}
}

// usageError is a command line the command cannot run.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// trigger asks the platform for one sample event of the named type.
func trigger(ctx context.Context, c *partneropen.Client, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trigger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() != 1 {
		return usageError{"usage: openplatform trigger EVENT_TYPE (e.g. health.report.created)"}
	}
	res, err := c.TriggerSandboxEvent(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Triggered %s: the platform delivers it like a real event, and `openplatform listen` forwards it.\n", res.Event)
	return nil
}

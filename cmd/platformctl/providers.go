package main

import (
	"net/url"
	"strconv"
)

// providers lists service providers and decides their review, like the
// operators' portal page: an approval or a rejection is final (a second
// decision answers 409 ALREADY_REVIEWED).
func (c *cli) providers(args []string) error {
	if len(args) == 0 {
		return usagef("providers needs a subcommand: list, review")
	}
	switch args[0] {
	case "list":
		fs := c.flags("providers list")
		app := fs.Int64("app", 0, "only the providers of this app")
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 0 || *app < 0 {
			return usagef("providers list takes only --app APP_ID")
		}
		return c.adminList("/admin/v1/service-providers", url.Values{"app_id": {positiveParam(*app)}}, nil, nil)
	case "review":
		fs := c.flags("providers review")
		decision := fs.String("decision", "", "approve or reject (required)")
		notes := fs.String("notes", "", "review notes")
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 || (*decision != "approve" && *decision != "reject") {
			return usagef("providers review needs one PROVIDER_ID and --decision approve|reject")
		}
		if n, err := strconv.ParseInt(rest[0], 10, 64); err != nil || n <= 0 {
			return usagef("PROVIDER_ID must be a positive integer, got %q", rest[0])
		}
		return c.print("POST", "/admin/v1/service-providers/"+rest[0]+"/review", map[string]any{"decision": *decision, "notes": *notes})
	default:
		return usagef("unknown providers subcommand %q", args[0])
	}
}

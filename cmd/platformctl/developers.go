package main

import (
	"net/url"
	"strconv"
)

// developerStatuses are the review statuses `developers list --status` accepts.
var developerStatuses = map[string]bool{"pending_review": true, "approved": true, "rejected": true}

// developerAccount is one account of GET /admin/v1/developers.
type developerAccount struct {
	DeveloperID int64   `json:"developer_id"`
	Email       string  `json:"email"`
	Status      string  `json:"status"`
	Reason      string  `json:"reason"`
	SignedUpAt  string  `json:"signed_up_at"`
	ReviewedAt  *string `json:"reviewed_at"`
	ReviewedBy  *string `json:"reviewed_by"`
}

// developers lists developer accounts and decides their qualification
// review, like the operators' portal page and through the same command.
// Unlike an app's or a provider's review the decision may be changed (a
// rejected developer approved once the papers arrive); repeating the
// current decision with the same notes answers 409 ALREADY_REVIEWED.
func (c *cli) developers(args []string) error {
	if len(args) == 0 {
		return usagef("developers needs a subcommand: list, show, review")
	}
	switch args[0] {
	case "list":
		fs := c.flags("developers list")
		status := fs.String("status", "", "only accounts in this status: pending_review, approved or rejected")
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 0 || (*status != "" && !developerStatuses[*status]) {
			return usagef("developers list takes only --status pending_review|approved|rejected")
		}
		var page struct {
			Developers []developerAccount `json:"developers"`
		}
		return c.adminList("/admin/v1/developers", url.Values{"status": {*status}}, &page, func() error {
			t := newTable(c.stdout, "ID", "EMAIL", "STATUS", "SIGNED UP", "REVIEWED BY", "REASON")
			for _, d := range page.Developers {
				by := "-"
				if d.ReviewedBy != nil {
					by = *d.ReviewedBy
				}
				t.row(strconv.FormatInt(d.DeveloperID, 10), d.Email, d.Status, d.SignedUpAt, by, d.Reason)
			}
			return t.flush()
		})
	case "show":
		rest, err := parse(c.flags("developers show"), args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 {
			return usagef("developers show needs one DEVELOPER_ID")
		}
		if err := positiveID("DEVELOPER_ID", rest[0]); err != nil {
			return err
		}
		return c.print("GET", "/admin/v1/developers/"+rest[0], nil)
	case "review":
		fs := c.flags("developers review")
		decision := fs.String("decision", "", "approve or reject (required)")
		notes := fs.String("notes", "", "the reason the developer reads (required to reject)")
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 || (*decision != "approve" && *decision != "reject") {
			return usagef("developers review needs one DEVELOPER_ID and --decision approve|reject")
		}
		if err := positiveID("DEVELOPER_ID", rest[0]); err != nil {
			return err
		}
		return c.print("POST", "/admin/v1/developers/"+rest[0]+"/review", map[string]any{"decision": *decision, "notes": *notes})
	default:
		return usagef("unknown developers subcommand %q", args[0])
	}
}

// positiveID checks a command-line id before anything is sent.
func positiveID(name, s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err != nil || n <= 0 {
		return usagef("%s must be a positive integer, got %q", name, s)
	}
	return nil
}

package main

import (
	"fmt"
	"net/url"
	"strings"
)

// outboxMail is one message of GET /admin/v1/outbox.
type outboxMail struct {
	MailID      int64  `json:"mail_id"`
	DeveloperID int64  `json:"developer_id"`
	To          string `json:"to"`
	Subject     string `json:"subject"`
	Body        string `json:"body"`
	QueuedAt    string `json:"queued_at"`
	Status      string `json:"status"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error"`
}

// outbox runs `outbox [--status S]`: the portal's mail, newest first, each
// message with its headers and whole body, since an operator of a node
// without SMTP passes the links in them on by hand.
func (c *cli) outbox(args []string) error {
	fs := c.flags("outbox")
	status := fs.String("status", "", "only messages in this status: queued, retrying, sent or failed")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usagef("outbox takes only flags")
	}
	var page struct {
		Mails []outboxMail `json:"mails"`
	}
	return c.adminList("/admin/v1/outbox", url.Values{"status": {*status}}, &page, func() error {
		c.printMails(page.Mails)
		return nil
	})
}

// printMails prints each message with its headers and whole body.
func (c *cli) printMails(mails []outboxMail) {
	if len(mails) == 0 {
		fmt.Fprintln(c.stdout, "the outbox is empty")
		return
	}
	for i, m := range mails {
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		fmt.Fprintf(c.stdout, "mail %d  %s  queued %s  attempts %d\n", m.MailID, m.Status, m.QueuedAt, m.Attempts)
		fmt.Fprintf(c.stdout, "To: %s (developer %d)\n", m.To, m.DeveloperID)
		fmt.Fprintf(c.stdout, "Subject: %s\n", m.Subject)
		if m.LastError != "" {
			fmt.Fprintf(c.stdout, "Last error: %s\n", m.LastError)
		}
		fmt.Fprintf(c.stdout, "\n%s\n", strings.TrimRight(m.Body, "\n"))
	}
}

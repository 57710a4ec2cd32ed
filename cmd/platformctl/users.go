package main

import (
	"fmt"
	"net/url"
)

// users runs `users erase OPEN_USER_ID --reason R` (admin role).
func (c *cli) users(args []string) error {
	if len(args) == 0 || args[0] != "erase" {
		return usagef("users needs a subcommand: erase")
	}
	fs := c.flags("users erase")
	reason := fs.String("reason", "", "why (ticket number, legal basis); no personal data")
	rest, err := parse(fs, args[1:], true)
	if err != nil {
		return err
	}
	if len(rest) != 1 || *reason == "" {
		return usagef("users erase needs exactly one OPEN_USER_ID and --reason REASON")
	}
	return c.show("POST", "/admin/v1/channel-users/"+url.PathEscape(rest[0])+"/erase", map[string]any{"reason": *reason}, func(map[string]any) {
		fmt.Fprintf(c.stdout, "user %s erased: data key destroyed, read models dropped, channel_user_id freed\n", rest[0])
	})
}

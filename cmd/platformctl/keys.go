package main

import "fmt"

// keys runs `keys rotate` (admin role): the last step of a master-key
// rotation, after every node was restarted with the new key as the current
// one and the old one as a previous key.
func (c *cli) keys(args []string) error {
	if len(args) == 0 || args[0] != "rotate" {
		return usagef("keys needs a subcommand: rotate")
	}
	fs := c.flags("keys rotate")
	rest, err := parse(fs, args[1:], true)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usagef("keys rotate takes no arguments")
	}
	return c.show("POST", "/admin/v1/keys/rotate", nil, func(data map[string]any) {
		fmt.Fprintf(c.stdout, "re-sealed %s personal-data key(s) with master key %s\n", plain(data["resealed"]), plain(data["master_key_id"]))
		fmt.Fprintln(c.stdout, "keep the old master key as a previous key while the log holds app or webhook secrets sealed by it")
	})
}

package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// operators runs `operators create|list|revoke`.
func (c *cli) operators(args []string) error {
	if len(args) == 0 {
		return usagef("operators needs a subcommand: create, list or revoke")
	}
	fs := c.flags("operators " + args[0])
	switch args[0] {
	case "create":
		name := fs.String("name", "", "the operator's name")
		role := fs.String("role", "", "admin, auditor or support")
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 0 || *name == "" || *role == "" {
			return usagef("operators create needs --name NAME --role admin|auditor|support")
		}
		return c.show("POST", "/admin/v1/operators", map[string]any{"name": *name, "role": *role}, func(data map[string]any) {
			for _, k := range []string{"operator_id", "name", "role", "token"} {
				fmt.Fprintf(c.stdout, "%s: %v\n", k, plain(data[k]))
			}
			fmt.Fprintln(c.stderr, "the token is shown only now; keep it secret")
		})
	case "list":
		if rest, err := parse(fs, args[1:], true); err != nil || len(rest) != 0 {
			return firstNonNil(err, usagef("operators list takes no arguments"))
		}
		return c.show("GET", "/admin/v1/operators", nil, func(data map[string]any) {
			t := newTable(c.stdout, "ID", "NAME", "ROLE", "REVOKED", "CREATED")
			list, _ := data["operators"].([]any)
			for _, o := range list {
				op, _ := o.(map[string]any)
				t.row(plain(op["operator_id"]), plain(op["name"]), plain(op["role"]), plain(op["revoked"]), plain(op["created_at"]))
			}
			_ = t.flush()
		})
	case "revoke":
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 {
			return usagef("operators revoke needs exactly one OPERATOR_ID")
		}
		return c.show("POST", "/admin/v1/operators/"+url.PathEscape(rest[0])+"/revoke", nil, func(map[string]any) {
			fmt.Fprintf(c.stdout, "operator %s revoked\n", rest[0])
		})
	}
	return usagef("unknown operators subcommand %q", args[0])
}

// audit runs `audit [filters]`: the audit facts, one per line.
func (c *cli) audit(args []string) error {
	fs := c.flags("audit")
	actor := fs.String("actor", "", "only facts of this actor (operator:ID, app:ID)")
	action := fs.String("action", "", "only facts of this action (user.erased, reveal.history, report.pull, ...)")
	subject := fs.String("subject", "", "only facts about this stream (user-ID, report-ID)")
	from := fs.String("from", "", "facts at or after this ISO 8601 time")
	to := fs.String("to", "", "facts before this ISO 8601 time")
	after := fs.Int64("after", 0, "facts after this seq")
	limit := fs.Int("limit", 100, "most facts to print (at most 1000)")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usagef("audit takes only flags")
	}
	q := url.Values{"after": {strconv.FormatInt(*after, 10)}, "limit": {strconv.Itoa(*limit)}}
	for k, v := range map[string]string{"actor": *actor, "action": *action, "subject": *subject, "from": *from, "to": *to} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return c.show("GET", "/admin/v1/audit?"+q.Encode(), nil, func(data map[string]any) {
		t := newTable(c.stdout, "SEQ", "AT", "ACTOR", "ACTION", "SUBJECTS", "REASON")
		list, _ := data["facts"].([]any)
		for _, f := range list {
			fact, _ := f.(map[string]any)
			var subjects []string
			for _, s := range asList(fact["subjects"]) {
				subjects = append(subjects, plain(s))
			}
			t.row(plain(fact["seq"]), plain(fact["at"]), plain(fact["actor"]), plain(fact["action"]), strings.Join(subjects, ","), plain(fact["reason"]))
		}
		_ = t.flush()
		if next := data["next_after"]; next != nil {
			fmt.Fprintf(c.stderr, "more: --after %s\n", plain(next))
		}
	})
}

// show calls the API and prints the data as JSON (--json) or through print.
func (c *cli) show(method, path string, body any, print func(map[string]any)) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	data, err := api.do(c.ctx, method, path, body)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	var m map[string]any
	if err := decode(data, &m); err != nil {
		return err
	}
	print(m)
	return nil
}

// plain renders a JSON value for a table cell: numbers without exponents.
func plain(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func firstNonNil(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

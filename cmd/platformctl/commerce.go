package main

import (
	"fmt"
	"net/url"
	"strconv"
)

// goodsView is a catalog entry as the admin API shows it.
type goodsView struct {
	GoodsID   int64  `json:"goods_id"`
	GoodsCode string `json:"goods_code"`
	GoodsName string `json:"goods_name"`
	Active    bool   `json:"active"`
}

func (c *cli) goods(args []string) error {
	if len(args) == 0 {
		return usagef("goods needs a subcommand: create, list, rename, deactivate, activate")
	}
	switch args[0] {
	case "create":
		fs := c.flags("goods create")
		code := fs.String("code", "", "goods code (required, at most 50)")
		name := fs.String("name", "", "goods name (required)")
		if _, err := parse(fs, args[1:], true); err != nil {
			return err
		}
		if *code == "" || *name == "" {
			return usagef("goods create needs --code and --name")
		}
		return c.print("POST", "/admin/v1/goods", map[string]any{"goods_code": *code, "goods_name": *name})
	case "list":
		fs := c.flags("goods list")
		if _, err := parse(fs, args[1:], true); err != nil {
			return err
		}
		var page struct {
			Goods []goodsView `json:"goods"`
		}
		return c.adminList("/admin/v1/goods", nil, &page, func() error {
			t := newTable(c.stdout, "GOODS_ID", "CODE", "NAME", "ACTIVE")
			for _, g := range page.Goods {
				t.row(strconv.FormatInt(g.GoodsID, 10), g.GoodsCode, g.GoodsName, strconv.FormatBool(g.Active))
			}
			return t.flush()
		})
	case "rename":
		fs := c.flags("goods rename")
		name := fs.String("name", "", "new goods name (required)")
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 || *name == "" {
			return usagef("goods rename needs one CODE and --name")
		}
		return c.print("PATCH", "/admin/v1/goods/"+url.PathEscape(rest[0]), map[string]any{"goods_name": *name})
	case "deactivate", "activate":
		fs := c.flags("goods " + args[0])
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 {
			return usagef("goods %s needs one CODE", args[0])
		}
		return c.print("POST", "/admin/v1/goods/"+url.PathEscape(rest[0])+"/"+args[0], nil)
	default:
		return usagef("unknown goods subcommand %q", args[0])
	}
}

func (c *cli) orders(args []string) error {
	if len(args) == 0 {
		return usagef("orders needs a subcommand: list, show, approve, reject, ship")
	}
	switch args[0] {
	case "list":
		fs := c.flags("orders list")
		app := fs.Int64("app", 0, "app id")
		status := fs.String("status", "", "order status")
		if _, err := parse(fs, args[1:], true); err != nil {
			return err
		}
		return c.adminList("/admin/v1/orders", url.Values{"app_id": {positiveParam(*app)}, "status": {*status}}, nil, nil)
	case "show", "approve":
		fs := c.flags("orders " + args[0])
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 {
			return usagef("orders %s needs one ORDER_CODE", args[0])
		}
		if args[0] == "show" {
			return c.print("GET", "/admin/v1/orders/"+url.PathEscape(rest[0]), nil)
		}
		return c.print("POST", "/admin/v1/orders/"+url.PathEscape(rest[0])+"/approve", nil)
	case "reject":
		fs := c.flags("orders reject")
		reason := fs.String("reason", "", "why the order is rejected")
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 {
			return usagef("orders reject needs one ORDER_CODE")
		}
		return c.print("POST", "/admin/v1/orders/"+url.PathEscape(rest[0])+"/reject", map[string]any{"reason": *reason})
	case "ship":
		fs := c.flags("orders ship")
		company := fs.String("logistics-company", "", "logistics company (required)")
		tracking := fs.String("tracking-number", "", "tracking number (required)")
		rest, err := parse(fs, args[1:], true)
		if err != nil {
			return err
		}
		if len(rest) != 1 || *company == "" || *tracking == "" {
			return usagef("orders ship needs one ORDER_CODE, --logistics-company and --tracking-number")
		}
		return c.print("POST", "/admin/v1/orders/"+url.PathEscape(rest[0])+"/ship", map[string]any{"logistics_company": *company, "tracking_number": *tracking})
	default:
		return usagef("unknown orders subcommand %q", args[0])
	}
}

// appsReview decides an app's onboarding review.
func (c *cli) appsReview(args []string) error {
	fs := c.flags("apps review")
	decision := fs.String("decision", "", "approve or reject (required)")
	notes := fs.String("notes", "", "review notes")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 1 || (*decision != "approve" && *decision != "reject") {
		return usagef("apps review needs one APP_ID and --decision approve|reject")
	}
	if _, err := strconv.ParseInt(rest[0], 10, 64); err != nil {
		return usagef("APP_ID must be an integer, got %q", rest[0])
	}
	if *decision == "approve" {
		fmt.Fprintln(c.stderr, secretsNote)
	}
	return c.print("POST", "/admin/v1/apps/"+rest[0]+"/review", map[string]any{"decision": *decision, "notes": *notes})
}

// print sends one admin request and prints its data as JSON.
func (c *cli) print(method, path string, body any) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	return c.printWith(api, method, path, body)
}

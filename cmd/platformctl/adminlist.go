package main

import (
	"net/url"
	"strconv"
)

// adminList GETs one of the admin API's lists and prints it. query's empty
// values are left out, so a flag left unset filters nothing. With --json,
// or for a list without a table of its own (render nil), the data is
// printed as the API sent it; otherwise it is decoded into page (a pointer
// to the list's envelope) and render prints it.
func (c *cli) adminList(path string, query url.Values, page any, render func() error) error {
	for k, vs := range query {
		if len(vs) == 0 || vs[0] == "" {
			delete(query, k)
		}
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	if render == nil {
		return c.printWith(api, "GET", path, nil)
	}
	data, err := api.do(c.ctx, "GET", path, nil)
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, data)
	}
	if err := decode(data, page); err != nil {
		return err
	}
	return render()
}

// positiveParam is n as a query value, or "" (left out) when n is not
// positive.
func positiveParam(n int64) string {
	if n <= 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

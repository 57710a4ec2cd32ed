package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Command lines the command cannot run exit with status 2 and say why,
// before any call to the platform (the base URL answers nothing).
func TestUsageErrors(t *testing.T) {
	creds := []string{"--base-url", "http://127.0.0.1:1", "--app-id", "1", "--app-key", "k", "--app-secret", "s"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: openplatform"},
		{[]string{"--base-url", "http://127.0.0.1:1", "listen"}, "set OPENPLATFORM_BASE_URL"},
		{append(creds, "nope"), `unknown command "nope"`},
		{append(creds, "listen"), "--forward-to must be an http(s) URL"},
		{append(creds, "listen", "--forward-to", "localhost:3000/hook"), "--forward-to must be an http(s) URL"},
		{append(creds, "listen", "--forward-to", "http://localhost:3000/hook", "--interval", "1ms"), "--interval must be at least 100ms"},
		{append(creds, "listen", "--forward-to", "http://localhost:3000/hook", "extra"), "listen takes no arguments"},
		{append(creds, "listen", "--forward-to", "http://localhost:3000/hook", "--wait", "21s"), "--wait must be whole seconds from 0s to 20s"},
		{append(creds, "listen", "--forward-to", "http://localhost:3000/hook", "--wait", "1500ms"), "--wait must be whole seconds"},
		{append(creds, "listen", "--forward-to", "http://localhost:3000/hook", "--wait", "-1s"), "--wait must be whole seconds"},
		{append(creds, "trigger"), "usage: openplatform trigger EVENT_TYPE"},
		{append(creds, "trigger", "a", "b"), "usage: openplatform trigger EVENT_TYPE"},
	} {
		t.Setenv("OPENPLATFORM_BASE_URL", "")
		t.Setenv("OPENPLATFORM_APP_ID", "")
		t.Setenv("OPENPLATFORM_APP_KEY", "")
		t.Setenv("OPENPLATFORM_APP_SECRET", "")
		var out, errOut bytes.Buffer
		if code := run(context.Background(), c.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut.String(), c.want)
		}
	}
}

// A listen secret is new each time and shaped like the platform's.
func TestNewSecret(t *testing.T) {
	a, b := newSecret(), newSecret()
	if a == b || !strings.HasPrefix(a, "whsec_") || len(a) != len("whsec_")+48 {
		t.Fatalf("secrets %q %q", a, b)
	}
}

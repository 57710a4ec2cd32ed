package smtp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/portal/mail"
)

// server accepts one SMTP session on loopback and returns the transcript
// of client lines and the message data.
func server(t *testing.T, extensions ...string) (addr string, done <-chan [2]string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan [2]string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		say := func(s string) { fmt.Fprintf(c, "%s\r\n", s) }
		var lines, data strings.Builder
		say("220 ready")
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				out <- [2]string{lines.String(), data.String()}
				return
			}
			lines.WriteString(l)
			cmd := strings.ToUpper(strings.TrimSpace(l))
			switch {
			case strings.HasPrefix(cmd, "EHLO"):
				for _, e := range extensions {
					say("250-" + e)
				}
				say("250 ok")
			case cmd == "DATA":
				say("354 go")
				for {
					d, err := r.ReadString('\n')
					if err != nil || d == ".\r\n" {
						break
					}
					data.WriteString(d)
				}
				say("250 queued")
			case cmd == "QUIT":
				say("221 bye")
				out <- [2]string{lines.String(), data.String()}
				return
			case strings.HasPrefix(cmd, "AUTH"):
				say("235 ok")
			default:
				say("250 ok")
			}
		}
	}()
	return ln.Addr().String(), out
}

func TestSendPlainOnLoopback(t *testing.T) {
	addr, done := server(t, "8BITMIME", "AUTH PLAIN")
	m, err := Parse("smtp://robot:s3cret@" + addr)
	if err != nil {
		t.Fatal(err)
	}
	err = m.Send(context.Background(), mail.Message{
		From: "portal@example.com", To: "dev@example.com\r\nBcc: victim@example.com",
		Subject: "Reset\r\nBcc: victim@example.com", Body: "line one\n.line starting with a dot\nend",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := <-done
	lines, data := got[0], got[1]
	if !strings.Contains(lines, "AUTH PLAIN") || !strings.Contains(lines, "MAIL FROM:<portal@example.com>") {
		t.Fatalf("session:\n%s", lines)
	}
	if strings.Contains(data, "\r\nBcc:") || strings.Contains(lines, "victim") && strings.Contains(lines, "RCPT TO:<victim") {
		t.Fatalf("header injection got through:\n%s\n%s", lines, data)
	}
	if !strings.Contains(data, "\r\n..line starting with a dot\r\n") || !strings.Contains(data, "Content-Type: text/plain; charset=utf-8") {
		t.Fatalf("data:\n%s", data)
	}
}

func TestRequireTLSRefusesAPlainServer(t *testing.T) {
	addr, _ := server(t)
	m, err := Parse("smtp://" + addr + "?tls=required")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Send(context.Background(), mail.Message{From: "a@example.com", To: "b@example.com", Subject: "s", Body: "b"}); err == nil ||
		!strings.Contains(err.Error(), "no STARTTLS") {
		t.Fatalf("send without STARTTLS: %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, bad := range []string{"", "mail.example.com", "smtps://h:465", "http://h", "smtp://"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	m, err := Parse("smtp://u:p%40ss@mail.example.com")
	if err != nil || m.Addr != "mail.example.com:25" || m.Username != "u" || m.Password != "p@ss" {
		t.Fatalf("%+v %v", m, err)
	}
}

package harness

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Statements counts the statements clients send to Postgres through a
// proxy (CountStatements): each execution of a prepared statement (a Bind)
// and each simple query, by its SQL text, whichever connection sent it.
// Counting what is sent, not timing it, a test can say how many round trips
// or statements of a kind an operation costs.
type Statements struct {
	mu    sync.Mutex
	count map[string]int
}

// CountStatements starts a proxy in front of db's server and returns the
// URL of db through it and the counts of what passes it.
func CountStatements(t testing.TB, db string) (*Statements, string) {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Statements{count: map[string]int{}}
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	target := u.Host
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { s.forward(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	u.Host = ln.Addr().String()
	return s, u.String()
}

// Count is how many statements sent so far match.
func (s *Statements) Count(match func(sql string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for sql, c := range s.count {
		if match(sql) {
			n += c
		}
	}
	return n
}

// Texts is every statement text sent so far with its count.
func (s *Statements) Texts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.count))
	for k, v := range s.count {
		out[k] = v
	}
	return out
}

// Is matches a statement whose text is sql, leading and trailing space
// aside.
func Is(sql string) func(string) bool {
	want := strings.TrimSpace(sql)
	return func(s string) bool { return strings.TrimSpace(s) == want }
}

// Has matches a statement whose text contains part.
func Has(part string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, part) }
}

// Protocol codes of the untyped messages a client may send first.
const (
	sslRequest    = 80877103
	gssEncRequest = 80877104
	cancelRequest = 80877102
)

// forward copies the client's side of one connection to up, reading the
// frontend protocol as it goes: Parse names statements, Bind executes one,
// Query sends one.
func (s *Statements) forward(up io.Writer, client io.Reader) {
	r := bufio.NewReader(io.TeeReader(client, up))
	s.parse(r)
	// Whatever could not be read as messages still passes.
	_, _ = io.Copy(io.Discard, r)
}

func (s *Statements) parse(r *bufio.Reader) {
	// Untyped: an SSL or GSS encryption request (answered by the server
	// with one byte, which the other direction copies), then the startup
	// message, or a cancel request.
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		code := binary.BigEndian.Uint32(hdr[4:])
		if n < 8 {
			return
		}
		if _, err := io.CopyN(io.Discard, r, int64(n-8)); err != nil {
			return
		}
		if code == cancelRequest {
			return
		}
		if code != sslRequest && code != gssEncRequest {
			break
		}
	}
	named := map[string]string{}
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		if n < 4 {
			return
		}
		body := make([]byte, n-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		switch hdr[0] {
		case 'P':
			name, rest := cstring(body)
			query, _ := cstring(rest)
			named[name] = query
		case 'B':
			_, rest := cstring(body)
			stmt, _ := cstring(rest)
			s.add(named[stmt])
		case 'Q':
			query, _ := cstring(body)
			s.add(query)
		}
	}
}

func (s *Statements) add(sql string) {
	s.mu.Lock()
	s.count[sql]++
	s.mu.Unlock()
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

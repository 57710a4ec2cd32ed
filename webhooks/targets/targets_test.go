package targets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// classifyCases lists every address class the policy names, in IPv4 and
// IPv6 form and through each IPv4 embedding; want is "" for allowed.
var classifyCases = []struct {
	addr string
	want string
}{
	// Public addresses pass, directly and through embeddings.
	{"8.8.8.8", ""},
	{"1.1.1.1", ""},
	{"93.184.215.14", ""},
	{"192.0.1.255", ""},     // just below 192.0.0.0/24's neighbour 192.0.2.0/24
	{"192.31.196.1", ""},    // AS112, globally reachable
	{"198.17.255.255", ""},  // just below benchmarking
	{"198.20.0.0", ""},      // just above benchmarking
	{"100.63.255.255", ""},  // just below CGNAT
	{"100.128.0.0", ""},     // just above CGNAT
	{"172.15.255.255", ""},  // just below 172.16/12
	{"172.32.0.0", ""},      // just above 172.16/12
	{"223.255.255.255", ""}, // just below multicast
	{"1.0.0.0", ""},         // just above 0.0.0.0/8
	{"2606:4700:4700::1111", ""},
	{"2001:4860:4860::8888", ""},
	{"2a00:1450:4001:80b::200e", ""},
	{"2002:0808:0808::1", ""}, // 6to4 of 8.8.8.8
	{"64:ff9b::808:808", ""},  // NAT64 of 8.8.8.8
	{"64:ff9b::1.1.1.1", ""},
	{"::ffff:8.8.8.8", ""},
	{"2001:200::1", ""}, // first address past 2001::/23

	// Loopback.
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"127.1.2.3", "loopback"},
	{"::1", "loopback"},
	{"::ffff:127.0.0.1", "loopback"},
	{"::ffff:7f00:1", "loopback"},
	{"2002:7f00:1::1", "loopback"},
	{"64:ff9b::7f00:1", "loopback"},
	{"64:ff9b::127.0.0.1", "loopback"},

	// Private (RFC 1918).
	{"10.0.0.1", "private"},
	{"10.255.255.255", "private"},
	{"172.16.0.1", "private"},
	{"172.31.255.255", "private"},
	{"192.168.0.1", "private"},
	{"192.168.255.255", "private"},
	{"::ffff:10.0.0.1", "private"},
	{"::ffff:192.168.1.1", "private"},
	{"2002:a00:1::1", "private"},
	{"2002:c0a8:101::", "private"},
	{"64:ff9b::a00:1", "private"},
	{"64:ff9b::172.16.0.1", "private"},

	// Link-local, including the cloud metadata service.
	{"169.254.0.1", "link-local"},
	{"169.254.169.254", "link-local"},
	{"::ffff:169.254.169.254", "link-local"},
	{"2002:a9fe:a9fe::1", "link-local"},
	{"64:ff9b::a9fe:a9fe", "link-local"},
	{"fe80::1", "link-local"},
	{"fe80::1%eth0", "link-local"},
	{"febf:ffff::1", "link-local"},

	// Unique-local (AWS's IPv6 metadata endpoint is fd00:ec2::254).
	{"fc00::1", "unique-local"},
	{"fd00:ec2::254", "unique-local"},
	{"fdff:ffff::1", "unique-local"},

	// Carrier-grade NAT (Alibaba's metadata endpoint is 100.100.100.200).
	{"100.64.0.1", "cgnat"},
	{"100.100.100.200", "cgnat"},
	{"100.127.255.255", "cgnat"},
	{"::ffff:100.64.0.1", "cgnat"},
	{"2002:6440:1::", "cgnat"},
	{"64:ff9b::100.64.0.1", "cgnat"},

	// Multicast.
	{"224.0.0.1", "multicast"},
	{"239.255.255.250", "multicast"},
	{"ff02::1", "multicast"},
	{"ff05::1:3", "multicast"},
	{"::ffff:224.0.0.251", "multicast"},
	{"2002:e000:1::", "multicast"},

	// Unspecified and "this network".
	{"0.0.0.0", "unspecified"},
	{"::", "unspecified"},
	{"::ffff:0.0.0.0", "unspecified"},
	{"0.0.0.1", "this-network"},
	{"0.255.255.255", "this-network"},
	{"::ffff:0.1.2.3", "this-network"},
	{"64:ff9b::", "unspecified"},

	// Broadcast and reserved 240.0.0.0/4.
	{"255.255.255.255", "broadcast"},
	{"::ffff:255.255.255.255", "broadcast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.254", "reserved"},
	{"2002:f000:1::", "reserved"},

	// Benchmarking.
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"::ffff:198.18.0.1", "benchmarking"},
	{"2001:2::1", "benchmarking"},

	// IETF protocol assignments (Oracle's metadata endpoint is 192.0.0.192).
	{"192.0.0.1", "ietf-protocol-assignment"},
	{"192.0.0.192", "ietf-protocol-assignment"},
	{"::ffff:192.0.0.8", "ietf-protocol-assignment"},
	{"2001:10::1", "ietf-protocol-assignment"},
	{"2001:1ff::1", "ietf-protocol-assignment"},

	// Documentation.
	{"192.0.2.1", "documentation"},
	{"198.51.100.1", "documentation"},
	{"203.0.113.1", "documentation"},
	{"::ffff:203.0.113.7", "documentation"},
	{"64:ff9b::192.0.2.33", "documentation"},
	{"2001:db8::1", "documentation"},
	{"2001:db8:ffff::1", "documentation"},
	{"3fff::1", "documentation"},

	// 6to4 relay anycast (deprecated).
	{"192.88.99.1", "6to4-relay"},

	// Teredo: the embedded IPv4 is obfuscated, so all of it is refused.
	{"2001::1", "teredo"},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"},
	{"2001:0:ffff:ffff::", "teredo"},

	// Site-local, IPv4-compatible, discard-only, local-use NAT64.
	{"fec0::1", "site-local"},
	{"feff::1", "site-local"},
	{"::7f00:1", "ipv4-compatible"},
	{"::8.8.8.8", "ipv4-compatible"},
	{"::a9fe:a9fe", "ipv4-compatible"},
	{"::2", "ipv4-compatible"},
	{"100::1", "discard-only"},
	{"100::ffff:ffff:ffff:ffff", "discard-only"},
	{"64:ff9b:1::a00:1", "nat64-local"},
	{"64:ff9b:1:ffff::808:808", "nat64-local"},

	// Everything outside 2000::/3 that has no more specific name.
	{"::ffff:0:a00:1", "reserved"}, // SIIT IPv4-translated
	{"100:0:0:1::", "reserved"},    // past 100::/64
	{"4000::1", "reserved"},
	{"5f00::1", "reserved"},
	{"e000::1", "reserved"},
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases {
		t.Run(tc.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tc.addr)
			reason, refused := Classify(ip)
			if refused != (tc.want != "") || reason != tc.want {
				t.Fatalf("Classify(%s) = (%q, %v), want (%q, %v)", tc.addr, reason, refused, tc.want, tc.want != "")
			}
		})
	}
}

func TestClassifyInvalid(t *testing.T) {
	if reason, refused := Classify(netip.Addr{}); !refused || reason != "invalid" {
		t.Fatalf("Classify(zero) = (%q, %v), want (invalid, true)", reason, refused)
	}
}

func TestDescribeGrammar(t *testing.T) {
	seen := map[string]bool{}
	for _, rs := range [][]rule{rules4, rules6} {
		for _, r := range rs {
			seen[r.reason] = true
		}
	}
	seen["reserved"], seen["invalid"] = true, true
	for reason := range seen {
		d := describe(reason)
		if !strings.HasSuffix(d, " address") || !(strings.HasPrefix(d, "a ") || strings.HasPrefix(d, "an ")) {
			t.Errorf("describe(%q) = %q, want an article and \"address\"", reason, d)
		}
	}
}

func TestGuardAllowLoopbackOnlyOwnLoopback(t *testing.T) {
	cases := []struct {
		addr  string
		allow bool
	}{
		{"127.0.0.1", true},
		{"127.9.9.9", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"8.8.8.8", true},
		{"2002:7f00:1::1", false},  // someone else's loopback via 6to4
		{"64:ff9b::7f00:1", false}, // the NAT64 gateway's loopback
		{"::7f00:1", false},        // IPv4-compatible
		{"0.0.0.0", false},
		{"::", false},
		{"10.0.0.1", false},
		{"169.254.169.254", false},
		{"fe80::1", false},
		{"fd00::1", false},
		{"100.64.0.1", false},
	}
	g := Guard{AllowLoopback: true}
	for _, tc := range cases {
		_, refused := g.refused(netip.MustParseAddr(tc.addr))
		if refused == tc.allow {
			t.Errorf("AllowLoopback: %s refused=%v, want %v", tc.addr, refused, !tc.allow)
		}
	}
}

func TestControlParse(t *testing.T) {
	for _, tc := range []struct {
		g       Guard
		address string
		refused bool
	}{
		{Guard{}, "8.8.8.8:443", false},
		{Guard{}, "[2606:4700:4700::1111]:443", false},
		{Guard{}, "127.0.0.1:443", true},
		{Guard{}, "[::1]:443", true},
		{Guard{}, "[::ffff:169.254.169.254]:80", true},
		{Guard{}, "[fe80::1%eth0]:80", true},
		{Guard{}, "not-an-address", true},
		{Guard{}, "example.com:443", true},
		{Guard{AllowLoopback: true}, "127.0.0.1:443", false},
		{Guard{AllowLoopback: true}, "[::1]:443", false},
		{Guard{AllowLoopback: true}, "10.1.2.3:443", true},
		{Guard{AllowLoopback: true}, "[2002:7f00:1::1]:443", true},
	} {
		err := tc.g.Control("tcp", tc.address, nil)
		if (err != nil) != tc.refused {
			t.Errorf("Control(%q, allow=%v) = %v, want refused=%v", tc.address, tc.g.AllowLoopback, err, tc.refused)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("Control(%q) error %v does not wrap ErrRefused", tc.address, err)
		}
	}
	err := Guard{}.Control("tcp", "169.254.169.254:80", nil)
	if err == nil || !strings.Contains(err.Error(), "169.254.169.254:80") || !strings.Contains(err.Error(), "link-local") {
		t.Fatalf("Control error %v should name the address and reason", err)
	}
}

// listen opens a loopback listener that accepts and closes connections, or
// skips when the address family is unavailable.
func listen(t *testing.T, network, address string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Skipf("cannot listen on %s %s: %v", network, address, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}

func TestControlWithRealDialer(t *testing.T) {
	for _, fam := range []struct{ network, address string }{
		{"tcp4", "127.0.0.1:0"},
		{"tcp6", "[::1]:0"},
	} {
		t.Run(fam.network, func(t *testing.T) {
			ln := listen(t, fam.network, fam.address)
			addr := ln.Addr().String()
			for _, allow := range []bool{false, true} {
				d := net.Dialer{Control: Guard{AllowLoopback: allow}.Control, Timeout: 5 * time.Second}
				c, err := d.DialContext(context.Background(), "tcp", addr)
				if allow {
					if err != nil {
						t.Fatalf("AllowLoopback dial %s: %v", addr, err)
					}
					c.Close()
					continue
				}
				if err == nil {
					c.Close()
					t.Fatalf("dial %s connected, want refused", addr)
				}
				var op *net.OpError
				if !errors.Is(err, ErrRefused) || !errors.As(err, &op) {
					t.Fatalf("dial %s: %v (%T), want *net.OpError wrapping ErrRefused", addr, err, err)
				}
			}
		})
	}
}

func TestClientRefusesLoopbackUnlessAllowed(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	urls := []string{srv.URL}
	if _, err := net.LookupHost("localhost"); err == nil {
		// Through the resolver too: localhost resolves to loopback only.
		u, _ := url.Parse(srv.URL)
		urls = append(urls, "http://localhost:"+u.Port())
	}
	for _, target := range urls {
		resp, err := Guard{}.Client(10*time.Second).Post(target, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("POST %s succeeded, want refused", target)
		}
		var ue *url.Error
		if !errors.Is(err, ErrRefused) || !errors.As(err, &ue) {
			t.Fatalf("POST %s: %v, want *url.Error wrapping ErrRefused", target, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("server saw %d requests from a refused client", n)
	}

	resp, err := Guard{AllowLoopback: true}.Client(10*time.Second).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("AllowLoopback POST: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || hits.Load() != 1 {
		t.Fatalf("AllowLoopback POST: status %d, hits %d", resp.StatusCode, hits.Load())
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()

	resp, err := Guard{AllowLoopback: true}.Client(10*time.Second).Post(srv.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || followed.Load() {
		t.Fatalf("status %d, followed %v; want the 302 itself", resp.StatusCode, followed.Load())
	}
	if loc := resp.Header.Get("Location"); loc != "/elsewhere" {
		t.Fatalf("Location %q", loc)
	}
}

func TestClientSettings(t *testing.T) {
	c := Guard{}.Client(10 * time.Second)
	if c.Timeout != 10*time.Second || c.CheckRedirect == nil {
		t.Fatalf("client timeout %v, CheckRedirect set %v", c.Timeout, c.CheckRedirect != nil)
	}
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport %T", c.Transport)
	}
	if tr.Proxy != nil || tr.DialContext == nil || !tr.ForceAttemptHTTP2 || tr.TLSHandshakeTimeout != 5*time.Second {
		t.Fatalf("transport settings: proxy=%v dial=%v h2=%v tls=%v", tr.Proxy != nil, tr.DialContext != nil, tr.ForceAttemptHTTP2, tr.TLSHandshakeTimeout)
	}
}

// fakeDNS answers from a map, so CheckURL is tested without a network.
func fakeDNS(records map[string][]string) func(ctx context.Context, host string) ([]netip.Addr, error) {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		addrs, ok := records[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

func TestCheckURL(t *testing.T) {
	lookup := fakeDNS(map[string][]string{
		"hooks.partner.example":   {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"internal.partner.test":   {"10.0.0.1"},
		"mixed.partner.test":      {"93.184.215.14", "192.168.1.10"},
		"mixed6.partner.test":     {"2606:4700:4700::1111", "fd00::1"},
		"metadata.partner.test":   {"::ffff:169.254.169.254"},
		"sixtofour.partner.test":  {"2002:a9fe:a9fe::1"},
		"localhost":               {"127.0.0.1", "::1"},
		"loopzone.partner.test":   {"fe80::1%eth0"},
		"empty.partner.test":      {},
		"rebind-nat64.partner.tt": {"64:ff9b::a00:1"},
	})
	cases := []struct {
		name  string
		allow bool
		url   string
		want  string // "" for ok; otherwise a substring of the message
		isRef bool   // error must wrap ErrRefused
	}{
		{"https public", false, "https://hooks.partner.example/webhooks", "", false},
		{"https public with port", false, "https://hooks.partner.example:8443/webhooks?x=1", "", false},
		{"https public IPv4 literal", false, "https://8.8.8.8/hook", "", false},
		{"https public IPv6 literal", false, "https://[2606:4700:4700::1111]:443/hook", "", false},
		{"http refused", false, "http://hooks.partner.example/webhooks", "must use https", true},
		{"http allowed with loopback", true, "http://hooks.partner.example/webhooks", "", false},
		{"ftp refused", true, "ftp://hooks.partner.example/", "must use https", true},
		{"private name", false, "https://internal.partner.test/", "resolves to a private address (10.0.0.1), which is not allowed", true},
		{"private name with loopback allowed", true, "https://internal.partner.test/", "private address", true},
		{"one public one private", false, "https://mixed.partner.test/", "private address (192.168.1.10)", true},
		{"one public one unique-local", false, "https://mixed6.partner.test/", "unique-local address (fd00::1)", true},
		{"mapped metadata", false, "https://metadata.partner.test/", "link-local address", true},
		{"6to4 metadata", false, "https://sixtofour.partner.test/", "link-local address (2002:a9fe:a9fe::1)", true},
		{"nat64 private", false, "https://rebind-nat64.partner.tt/", "private address", true},
		{"zoned link-local", false, "https://loopzone.partner.test/", "link-local address (fe80::1)", true},
		{"localhost", false, "https://localhost/", "resolves to a loopback address (127.0.0.1), which is not allowed", true},
		{"localhost allowed", true, "http://localhost:8080/", "", false},
		{"IPv6 loopback literal", false, "https://[::1]/hook", "points to a loopback address (::1)", true},
		{"IPv6 loopback literal allowed", true, "https://[::1]:9000/hook", "", false},
		{"IPv4 loopback literal", false, "https://127.0.0.1/", "loopback address", true},
		{"metadata literal", false, "http://169.254.169.254/latest/meta-data/", "must use https", true},
		{"metadata literal https", false, "https://169.254.169.254/latest/meta-data/", "link-local address (169.254.169.254)", true},
		{"metadata literal allowed loopback", true, "http://169.254.169.254/", "link-local", true},
		{"mapped literal", false, "https://[::ffff:10.1.1.1]/", "private address", true},
		{"zoned literal", false, "https://[fe80::1%25eth0]/", "link-local", true},
		{"unspecified literal allowed loopback", true, "http://0.0.0.0:8080/", "unspecified address", true},
		{"userinfo", false, "https://user:pass@hooks.partner.example/", "user name or password", true},
		{"user only", false, "https://token@hooks.partner.example/", "user name or password", true},
		{"no host", false, "https:///path", "must name a host", true},
		{"relative", false, "/webhooks", "absolute URL", true},
		{"opaque", false, "https:hooks.partner.example", "absolute URL", true},
		{"unparsable", false, "https://hooks.partner.example:port/", "absolute URL", true},
		{"port zero", false, "https://hooks.partner.example:0/", "port between", true},
		{"port too large", false, "https://hooks.partner.example:70000/", "port between", true},
		{"decimal IPv4", false, "https://2130706433/", "DNS name or an IP address", true},
		{"hex IPv4", false, "https://0x7f.1/", "DNS name or an IP address", true},
		{"short IPv4", false, "https://127.1/", "DNS name or an IP address", true},
		{"unresolvable", false, "https://nowhere.partner.test/", "host does not resolve", false},
		{"no addresses", false, "https://empty.partner.test/", "host does not resolve", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := Guard{AllowLoopback: tc.allow, Lookup: lookup}
			err := g.CheckURL(context.Background(), tc.url)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want ok", tc.url, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckURL(%q) = nil, want %q", tc.url, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckURL(%q) = %q, want it to contain %q", tc.url, err, tc.want)
			}
			if errors.Is(err, ErrRefused) != tc.isRef {
				t.Fatalf("CheckURL(%q): errors.Is(ErrRefused) = %v, want %v", tc.url, !tc.isRef, tc.isRef)
			}
			if strings.Contains(err.Error(), ErrRefused.Error()) || strings.Contains(err.Error(), "no such host") {
				t.Fatalf("CheckURL(%q) = %q: message should be partner-readable only", tc.url, err)
			}
		})
	}
}

func TestCheckURLKeepsResolverCause(t *testing.T) {
	g := Guard{Lookup: fakeDNS(nil)}
	err := g.CheckURL(context.Background(), "https://nowhere.partner.test/")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("CheckURL error %v should wrap the *net.DNSError", err)
	}
}

func TestCheckURLLiteralSkipsLookup(t *testing.T) {
	g := Guard{Lookup: func(context.Context, string) ([]netip.Addr, error) {
		t.Fatal("IP literal must not be resolved")
		return nil, nil
	}}
	if err := g.CheckURL(context.Background(), "https://[2606:4700:4700::1111]/"); err != nil {
		t.Fatal(err)
	}
}

func TestCheckURLBoundsLookup(t *testing.T) {
	g := Guard{Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		if _, ok := ctx.Deadline(); !ok {
			return nil, fmt.Errorf("lookup of %s has no deadline", host)
		}
		return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
	}}
	if err := g.CheckURL(context.Background(), "https://hooks.partner.example/"); err != nil {
		t.Fatal(err)
	}
}

func TestCheckURLDefaultResolver(t *testing.T) {
	// With no Lookup, the Resolver is used; a resolver whose Dial always
	// fails proves the path without depending on real DNS.
	var dialed atomic.Bool
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		dialed.Store(true)
		return nil, errors.New("no DNS in tests")
	}}
	err := Guard{Resolver: r}.CheckURL(context.Background(), "https://hooks.partner.invalid/")
	if err == nil || err.Error() != "host does not resolve" || !dialed.Load() {
		t.Fatalf("CheckURL = %v (resolver dialled %v), want host does not resolve via the resolver", err, dialed.Load())
	}
}

func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases {
		f.Add(netip.MustParseAddr(tc.addr).AsSlice())
	}
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b)
		reason, refused := Classify(ip)
		if !ok {
			if !refused || reason != "invalid" {
				t.Fatalf("invalid address classified (%q, %v)", reason, refused)
			}
			return
		}
		if refused != (reason != "") {
			t.Fatalf("Classify(%s) = (%q, %v): reason and verdict disagree", ip, reason, refused)
		}
		if !ip.Is4() {
			return
		}
		v4 := ip.As4()
		mapped := netip.AddrFrom16(ip.As16())
		sixToFour := netip.AddrFrom16([16]byte{0x20, 0x02, v4[0], v4[1], v4[2], v4[3], 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
		nat64 := netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, v4[0], v4[1], v4[2], v4[3]})
		for _, form := range []netip.Addr{mapped, sixToFour, nat64} {
			r, ref := Classify(form)
			if r != reason || ref != refused {
				t.Fatalf("Classify(%s) = (%q, %v) but Classify(%s) = (%q, %v)", form, r, ref, ip, reason, refused)
			}
		}
	})
}

// TestIdleConnectionsServeManyEndpointHosts sends to 150 endpoints on distinct
// hosts, then to each again: with the default pool the repeat reuses every
// connection (no new handshakes at the partners); a pool of 100 in all closes
// the least recently used ones, and the partners see new connections.
func TestIdleConnectionsServeManyEndpointHosts(t *testing.T) {
	const hosts = 150
	var opened atomic.Int64
	urls := make([]string, hosts)
	for i := range urls {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				opened.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	round := func(c *http.Client) int64 {
		before := opened.Load()
		for _, u := range urls {
			resp, err := c.Post(u, "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatalf("POST %s: %v", u, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return opened.Load() - before
	}

	c := Guard{AllowLoopback: true}.Client(10 * time.Second)
	if n := round(c); n != hosts {
		t.Fatalf("first round opened %d connections, want %d", n, hosts)
	}
	if n := round(c); n != 0 {
		t.Fatalf("second round opened %d new connections with the default pool, want 0", n)
	}
	c.CloseIdleConnections()

	small := Guard{AllowLoopback: true, Pool: Pool{Idle: 100}}.Client(10 * time.Second)
	round(small)
	if n := round(small); n < hosts-100 {
		t.Fatalf("second round with 100 idle connections in all opened %d, want at least %d", n, hosts-100)
	}
	small.CloseIdleConnections()
}

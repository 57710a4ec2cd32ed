// Package targets keeps webhook deliveries away from the platform's own
// networks: partners choose the URL, so without a guard a webhook is a way to
// make the platform send requests to its loopback, its private networks or a
// cloud metadata service (SSRF), and DNS can change between the check and the
// connection (rebinding). The decisive check therefore runs at connect time,
// on the address actually being dialled; CheckURL only gives partners an
// early, readable answer when they configure a URL.
package targets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrRefused marks a target the platform will never deliver to, so the dispatcher can stop retrying instead of backing off.
var ErrRefused = errors.New("webhook target refused")

// rule refuses the addresses of one prefix for one reason.
type rule struct {
	prefix netip.Prefix
	reason string
}

// rules4 is checked in order; the first match wins, so narrower prefixes
// come before the wider ones that contain them.
var rules4 = []rule{
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified"},
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("100.64.0.0/10"), "cgnat"},
	{netip.MustParsePrefix("192.0.0.0/24"), "ietf-protocol-assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4-relay"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
}

// rules6 is checked in order after IPv4 embeddings have been extracted.
var rules6 = []rule{
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "ipv4-compatible"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "nat64-local"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("2001::/32"), "teredo"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking"},
	{netip.MustParsePrefix("2001::/23"), "ietf-protocol-assignment"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
}

var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
)

// Classify decides whether the platform may connect to ip, so that every check (config time and connect time) applies one policy; reason is empty when it may.
func Classify(ip netip.Addr) (reason string, refused bool) {
	if !ip.IsValid() {
		return "invalid", true
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is4() {
		return match(rules4, ip)
	}
	b := ip.As16()
	switch {
	case nat64WellKnown.Contains(ip):
		return Classify(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(ip):
		return Classify(netip.AddrFrom4([4]byte(b[2:6])))
	}
	if reason, refused := match(rules6, ip); refused {
		return reason, true
	}
	if !globalUnicast6.Contains(ip) {
		return "reserved", true
	}
	return "", false
}

func match(rules []rule, ip netip.Addr) (string, bool) {
	for _, r := range rules {
		if r.prefix.Contains(ip) {
			return r.reason, true
		}
	}
	return "", false
}

// describe turns a reason into the noun phrase partners read in a 422.
func describe(reason string) string {
	switch reason {
	case "cgnat":
		return "a carrier-grade NAT address"
	case "this-network":
		return `a "this network" address`
	case "ietf-protocol-assignment":
		return "an IETF protocol assignment address"
	case "teredo":
		return "a Teredo address"
	case "ipv4-compatible":
		return "an IPv4-compatible address"
	case "nat64-local":
		return "a local-use NAT64 address"
	case "6to4-relay":
		return "a 6to4 relay anycast address"
	case "unspecified", "invalid":
		return "an " + reason + " address"
	}
	return "a " + reason + " address"
}

// Guard applies the target policy to webhook deliveries; its zero value is the production policy.
type Guard struct {
	// AllowLoopback admits http and 127.0.0.0/8 and ::1 targets for local development and tests (PLATFORM_WEBHOOK_ALLOW_LOOPBACK=1).
	AllowLoopback bool
	// Resolver resolves partner host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Lookup replaces the resolver in CheckURL so tests need no DNS; nil means Resolver.LookupNetIP(ctx, "ip", host).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Pool sizes the delivery client's keep-alive connections.
	Pool Pool
}

// Pool sizes the keep-alive connections the delivery client keeps between
// POSTs. A node sending to many partners on distinct hosts needs an idle
// connection per warm endpoint, or every delivery pays a new TCP and TLS
// handshake, at the platform and at the partner. Zero fields take the defaults.
type Pool struct {
	// Idle bounds the idle connections kept to all endpoints together; the least recently used one is closed first.
	Idle int
	// IdlePerHost bounds the idle connections kept to one endpoint host; more than the POSTs the sender keeps in flight to one endpoint are never reused.
	IdlePerHost int
}

// Pool defaults: an idle TLS connection holds roughly 50 KB, so the default
// total is about 50 MB at most, enough for a thousand warm endpoint hosts.
const (
	DefaultIdleConnections        = 1024
	DefaultIdleConnectionsPerHost = 16 // the sender's default POSTs in flight to one endpoint
)

func (p Pool) withDefaults() Pool {
	if p.Idle <= 0 {
		p.Idle = DefaultIdleConnections
	}
	if p.IdlePerHost <= 0 {
		p.IdlePerHost = DefaultIdleConnectionsPerHost
	}
	return p
}

// refused reports why ip may not be connected to, honouring AllowLoopback.
func (g Guard) refused(ip netip.Addr) (string, bool) {
	reason, refused := Classify(ip)
	if refused && g.AllowLoopback && ip.Unmap().IsLoopback() {
		// Only the host's own loopback: a 6to4 or NAT64 embedding of
		// 127.0.0.1 is someone else's loopback and stays refused.
		return "", false
	}
	return reason, refused
}

// Control refuses the connection after DNS resolution, on the address actually dialled, so rebinding between CheckURL and delivery cannot reach an internal address.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dialled address %q (%s)", ErrRefused, address, network)
	}
	if reason, refused := g.refused(ap.Addr()); refused {
		return fmt.Errorf("%w: %s is %s", ErrRefused, address, describe(reason))
	}
	return nil
}

// Client returns the HTTP client deliveries must use, because only its dialer enforces the policy and it never follows redirects or environment proxies.
func (g Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Control:  g.Control,
		Timeout:  5 * time.Second,
		Resolver: g.Resolver,
	}
	pool := g.Pool.withDefaults()
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    5 * time.Second,
		MaxIdleConns:           pool.Idle,
		MaxIdleConnsPerHost:    pool.IdlePerHost,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       timeout,
		CheckRedirect: refuseRedirects,
	}
}

// refuseRedirects is the delivery client's redirect policy: a redirect is
// the receiver's answer, never followed (a partner's URL could otherwise
// send the platform anywhere the dialler would not refuse, and the
// signature was made for the URL the partner configured).
func refuseRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// FollowsNoRedirects reports whether c is a client Client made or one with
// its policies: no redirect followed, no cookie jar. Only of such a client
// may a request be sent through its Transport alone, as http.Client.Do
// would send it.
func FollowsNoRedirects(c *http.Client) bool {
	return c != nil && c.Jar == nil && c.CheckRedirect != nil &&
		reflect.ValueOf(c.CheckRedirect).Pointer() == reflect.ValueOf(refuseRedirects).Pointer()
}

// urlError carries a short partner-readable message while keeping the cause for errors.Is.
type urlError struct {
	msg   string
	cause error
}

func (e *urlError) Error() string { return e.msg }
func (e *urlError) Unwrap() error { return e.cause }

func refuse(format string, args ...any) error {
	return &urlError{msg: fmt.Sprintf(format, args...), cause: ErrRefused}
}

// lookupTimeout bounds configuration-time resolution so a slow partner DNS cannot hold an operator request.
const lookupTimeout = 5 * time.Second

// CheckURL vets a webhook URL when it is configured so partners learn at once that a target is unusable; Control still decides at delivery time.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return refuse("must be an absolute URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !g.AllowLoopback {
			return refuse("must use https")
		}
	default:
		return refuse("must use https")
	}
	if u.User != nil {
		return refuse("must not contain a user name or password")
	}
	host := u.Hostname()
	if host == "" {
		return refuse("must name a host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return refuse("must use a port between 1 and 65535")
		}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if reason, refused := g.refused(ip); refused {
			return refuse("points to %s (%s), which is not allowed", describe(reason), ip)
		}
		return nil
	}
	if numericHost(host) {
		return refuse("must be a DNS name or an IP address")
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return &urlError{msg: "host does not resolve", cause: err}
	}
	if len(addrs) == 0 {
		return &urlError{msg: "host does not resolve", cause: &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}}
	}
	for _, ip := range addrs {
		if reason, refused := g.refused(ip); refused {
			return refuse("resolves to %s (%s), which is not allowed", describe(reason), ip.WithZone(""))
		}
	}
	return nil
}

func (g Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if g.Lookup != nil {
		return g.Lookup(ctx, host)
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	return r.LookupNetIP(ctx, "ip", host)
}

// numericHost reports hosts that some resolvers (getaddrinfo's inet_aton)
// read as IPv4 in legacy forms such as 2130706433, 0x7f.1 or 127.1: a name
// whose last label is a number is never a DNS name (WHATWG URL rule).
func numericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	digits := last
	if len(last) >= 2 && (last[:2] == "0x" || last[:2] == "0X") {
		digits = last[2:]
		for _, c := range digits {
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
		return true
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

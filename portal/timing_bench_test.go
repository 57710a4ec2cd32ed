package portal_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// The enumeration benchmarks time the sign-up and reset pages for an
// address with an account and one without, interleaved (so both see the
// same load and background work), and report each side's median: the two
// must be alike. They measure, they assert nothing about time; run them as
//
//	go test -run '^$' -bench 'EnumerationReset' -benchtime 200x -count 3 ./portal/
//	go test -run '^$' -bench 'EnumerationSignUp' -benchtime 60x -count 3 ./portal/
//
// Sign-up uses the production argon2id costs (the work that would
// differ); its background work is ~0.3 s a sign-up, so more than about 120
// sign-ups in a row fill the work queue and are refused 429 (alike).

func medianMS(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

func enumerationPlatform(b *testing.B, params commands.PasswordParams) *portaltest.Platform {
	return portaltest.Start(b, node.Config{DataDir: b.TempDir(), Portal: node.PortalConfig{AddressLimit: 1 << 30, Passwords: params}})
}

func BenchmarkEnumerationSignUp(b *testing.B) {
	p := enumerationPlatform(b, commands.DefaultPasswordParams)
	owner := portaltest.Email(b, "owner")
	p.Developer(owner, false)
	br := p.Browser()
	br.Get("/portal/signup")
	var known, unknown []time.Duration
	post := func(email string) time.Duration {
		start := time.Now()
		if got := br.Post("/portal/signup", url.Values{"email": {email}, "password": {"a long enough password"}}); got.Status != http.StatusOK {
			b.Fatalf("sign-up %s: %d %s", email, got.Status, got.Text())
		}
		took := time.Since(start)
		time.Sleep(5 * time.Millisecond)
		return took
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			known = append(known, post(owner))
			unknown = append(unknown, post(portaltest.Email(b, "new")))
		} else {
			unknown = append(unknown, post(portaltest.Email(b, "new")))
			known = append(known, post(owner))
		}
	}
	b.ReportMetric(medianMS(known), "known-median-ms")
	b.ReportMetric(medianMS(unknown), "unknown-median-ms")
}

func BenchmarkEnumerationReset(b *testing.B) {
	p := enumerationPlatform(b, portaltest.FastPasswords)
	owner := portaltest.Email(b, "owner")
	p.Developer(owner, false)
	br := p.Browser()
	br.Get("/portal/password/forgot")
	var known, unknown []time.Duration
	post := func(email string) time.Duration {
		start := time.Now()
		if got := br.Post("/portal/password/forgot", url.Values{"email": {email}}); got.Status != http.StatusOK {
			b.Fatalf("forgot %s: %d", email, got.Status)
		}
		took := time.Since(start)
		// Paced like a person, not a flood: each request's background work
		// is done before the next request (a flood beyond the work queue is
		// refused 429 for every address alike).
		time.Sleep(5 * time.Millisecond)
		return took
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			known = append(known, post(owner))
			unknown = append(unknown, post(portaltest.Email(b, "nobody")))
		} else {
			unknown = append(unknown, post(portaltest.Email(b, "nobody")))
			known = append(known, post(owner))
		}
	}
	b.ReportMetric(medianMS(known), "known-median-ms")
	b.ReportMetric(medianMS(unknown), "unknown-median-ms")
}

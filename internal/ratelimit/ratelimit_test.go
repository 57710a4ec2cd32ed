package ratelimit

import (
	"testing"
	"time"
)

func TestBucketRefillsContinuously(t *testing.T) {
	now := time.Unix(0, 0)
	l := New(60, time.Minute)
	l.Now = func() time.Time { return now }
	for i := 0; i < 60; i++ {
		if d := l.Allow("a"); !d.Allowed || d.Remaining != 59-i {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	d := l.Allow("a")
	if d.Allowed || d.RetryAfter != time.Second || d.Remaining != 0 {
		t.Fatalf("61st: %+v", d)
	}
	if other := l.Allow("b"); !other.Allowed {
		t.Fatal("keys share a bucket")
	}
	now = now.Add(999 * time.Millisecond)
	if l.Allow("a").Allowed {
		t.Fatal("allowed before a token refilled")
	}
	now = now.Add(2 * time.Millisecond)
	if !l.Allow("a").Allowed {
		t.Fatal("refused after a token refilled")
	}
	now = now.Add(time.Hour)
	if d := l.Allow("a"); !d.Allowed || d.Remaining != 59 {
		t.Fatalf("after an hour: %+v", d)
	}
}

func TestPruneKeepsBehaviour(t *testing.T) {
	now := time.Unix(0, 0)
	l := New(2, time.Second)
	l.Now = func() time.Time { return now }
	for i := 0; i < 5000; i++ {
		l.Allow(string(rune('a' + i%26)))
		now = now.Add(time.Millisecond)
	}
	if len(l.buckets) > 26 {
		t.Fatalf("%d buckets kept", len(l.buckets))
	}
}

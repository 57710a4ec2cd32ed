package edgetest

import (
	"context"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
)

// Directory is an app directory both signature schemes read: apps by id
// and by key, safe for concurrent requests.
type Directory struct {
	mu   sync.Mutex
	apps map[int64]domain.App
}

// NewDirectory holds apps.
func NewDirectory(apps ...domain.App) *Directory {
	d := &Directory{apps: map[int64]domain.App{}}
	for _, a := range apps {
		d.Put(a)
	}
	return d
}

// Put adds or replaces an app.
func (d *Directory) Put(a domain.App) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.apps[a.AppID] = a
}

// ByID finds an app by id.
func (d *Directory) ByID(id int64) (domain.App, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.apps[id]
	return a, ok
}

// ByKey finds an app by key.
func (d *Directory) ByKey(key string) (domain.App, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.apps {
		if a.AppKey == key {
			return a, true
		}
	}
	return domain.App{}, false
}

// Nonces accepts each scheme H nonce once per scope.
type Nonces struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Use reports whether nonce is new in scope, and records it.
func (n *Nonces) Use(_ context.Context, scope, nonce string, _ time.Time) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	if n.seen[scope+"\x00"+nonce] {
		return false, nil
	}
	n.seen[scope+"\x00"+nonce] = true
	return true, nil
}

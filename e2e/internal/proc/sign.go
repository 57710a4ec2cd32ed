package proc

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Partner is an app's credentials as the operator receives them.
type Partner struct {
	Creds
	WebhookSecret string `json:"webhook_secret"`
}

// SignedM builds a scheme M request (see Stamp for the timestamp rule).
func SignedM(c Creds, method, path string, body []byte) func(base string) (*http.Request, error) {
	return func(base string) (*http.Request, error) {
		ts, sig := Stamp(c, method+" "+path, string(body))
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-App-Id", strconv.FormatInt(c.AppID, 10))
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Signature", sig)
		return req, nil
	}
}

var chaosNonces atomic.Int64

// SignedH builds a scheme H request with a fresh nonce, written from the spec.
func SignedH(c Creds, method, uri string) func(base string) (*http.Request, error) {
	return func(base string) (*http.Request, error) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		nonce := fmt.Sprintf("chaos-%d-%d", time.Now().UnixNano(), chaosNonces.Add(1))
		sum := sha256.Sum256(nil)
		m := hmac.New(sha256.New, []byte(c.Secret))
		m.Write([]byte(method + "\n" + uri + "\n" + ts + "\n" + nonce + "\n" + hex.EncodeToString(sum[:])))
		req, err := http.NewRequest(method, base+uri, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-App-Key", c.Key)
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Nonce", nonce)
		req.Header.Set("X-Signature", hex.EncodeToString(m.Sum(nil)))
		return req, nil
	}
}

// Bearer builds an operator (or uploader) request.
func Bearer(token, method, path string, body []byte) func(base string) (*http.Request, error) {
	return func(base string) (*http.Request, error) {
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}
}

func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

type Creds struct {
	AppID  int64  `json:"app_id"`
	Key    string `json:"app_key"`
	Secret string `json:"app_secret"`
}

// signedRoutes remembers the routes of each scheme M signature made here:
// the platform binds an accepted signature to its method, path and query
// for its window (another route only within auth.BindingGrace of its first
// use), and every bodyless request of one second has one signature.
var signedRoutes = struct {
	sync.Mutex
	m map[string]map[string]bool
}{m: map[string]map[string]bool{}}

// Stamp signs at the current second as a spec-faithful client does: a
// signature of the current second serves other routes too (its first use
// was within the second, inside the platform's grace), and a read may
// repeat its own. A write never repeats one (the platform answers an
// identical write from its record, as a replay) and an earlier second's
// signature is not reused; then it takes the nearest free earlier second.
func Stamp(c Creds, route, body string) (ts, sig string) {
	signedRoutes.Lock()
	defer signedRoutes.Unlock()
	now := time.Now().Unix()
	for back := int64(0); back < 250; back++ {
		ts = strconv.FormatInt(now-back, 10)
		sig = fmt.Sprintf("%x", md5.Sum([]byte(c.Key+ts+c.Secret+body)))
		routes := signedRoutes.m[sig]
		ok := routes == nil
		switch {
		case routes[route]:
			ok = strings.HasPrefix(route, "GET ")
		case routes != nil:
			ok = back == 0
		}
		if ok {
			if routes == nil {
				routes = map[string]bool{}
				signedRoutes.m[sig] = routes
			}
			routes[route] = true
			return ts, sig
		}
	}
	panic("no free timestamp for " + route)
}

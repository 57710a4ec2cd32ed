// Package sigvectors loads the signature vectors every signer and verifier
// of the platform is tested against: ../shared/vectors/signatures.json,
// computed from the spec by people who did not write this code, and used
// as it is (never regenerated from the implementation).
package sigvectors

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// EnvPath names the file explicitly, for checkouts where shared/ is not
// beside the repository.
const EnvPath = "PLATFORM_VECTORS"

// Credentials are the app the vectors were computed for.
type Credentials struct {
	AppID         string `json:"app_id"`
	AppKey        string `json:"app_key"`
	AppSecret     string `json:"app_secret"`
	WebhookSecret string `json:"webhook_secret"`
}

// MCase is one scheme M request.
type MCase struct {
	Name       string            `json:"name"`
	Method     string            `json:"method"`
	Timestamp  int64             `json:"timestamp"`
	Body       string            `json:"body"`
	BodyBase64 string            `json:"body_base64"`
	Headers    map[string]string `json:"headers"`
	Signature  string            `json:"signature"`
}

// HCase is one scheme H request.
type HCase struct {
	Name       string `json:"name"`
	Method     string `json:"method"`
	URI        string `json:"uri"`
	Timestamp  int64  `json:"timestamp"`
	Nonce      string `json:"nonce"`
	Body       string `json:"body"`
	BodyBase64 string `json:"body_base64"`
	SignString string `json:"sign_string"`
	Signature  string `json:"signature"`
}

// LaunchCase is one plugin launch signature.
type LaunchCase struct {
	Name        string `json:"name"`
	AppKey      string `json:"app_key"`
	ThirdUserID string `json:"third_user_id"`
	Timestamp   int64  `json:"timestamp"`
	Nonce       string `json:"nonce"`
	SignString  string `json:"sign_string"`
	Signature   string `json:"signature"`
}

// WebhookCase is one webhook delivery: valid at ValidAt, stale at StaleAt.
type WebhookCase struct {
	Name       string `json:"name"`
	Timestamp  int64  `json:"timestamp"`
	Body       string `json:"body"`
	BodyBase64 string `json:"body_base64"`
	Signature  string `json:"signature"`
	ValidAt    int64  `json:"valid_at"`
	StaleAt    int64  `json:"stale_at"`
}

// File is the whole vector file.
type File struct {
	Credentials Credentials `json:"credentials"`
	SchemeM     struct {
		Cases []MCase `json:"cases"`
	} `json:"scheme_m"`
	SchemeH struct {
		Cases []HCase `json:"cases"`
	} `json:"scheme_h"`
	PluginLaunch struct {
		Cases []LaunchCase `json:"cases"`
	} `json:"plugin_launch"`
	Webhook struct {
		Cases []WebhookCase `json:"cases"`
	} `json:"webhook"`
}

// Path finds the file: $PLATFORM_VECTORS, else shared/vectors/signatures.json
// beside the repository (searched upwards from the working directory, which
// go test sets to the package's folder).
func Path() (string, error) {
	if p := os.Getenv(EnvPath); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "shared", "vectors", "signatures.json")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("sigvectors: no shared/vectors/signatures.json above the working directory; set %s", EnvPath)
		}
		dir = parent
	}
}

// Load reads the file or fails the test: a missing file is a broken
// checkout, not a reason to skip.
func Load(t testing.TB) File {
	t.Helper()
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("sigvectors: %v", err)
	}
	var f File
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("sigvectors: %s: %v", p, err)
	}
	if len(f.SchemeM.Cases) == 0 || len(f.SchemeH.Cases) == 0 || len(f.PluginLaunch.Cases) == 0 || len(f.Webhook.Cases) == 0 {
		t.Fatalf("sigvectors: %s lacks a section's cases", p)
	}
	return f
}

// Bytes is a case's exact body: the base64 form, checked against the text
// form so a vector file edited by hand cannot disagree with itself.
func Bytes(t testing.TB, text, b64 string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("sigvectors: body_base64: %v", err)
	}
	if string(b) != text {
		t.Fatalf("sigvectors: body_base64 decodes to %q, body is %q", b, text)
	}
	return b
}

// Stamp is a Unix timestamp as the headers carry it.
func Stamp(sec int64) string { return strconv.FormatInt(sec, 10) }

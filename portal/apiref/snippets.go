package apiref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Snippet is one code example of an operation: curl or one SDK's call.
type Snippet struct {
	Lang  string // "curl", "go", "js", "python", "java"
	Label string // what the tab says
	Code  string
}

// Languages are the example tabs in their order; the page's script
// remembers the reader's choice across operations and pages.
var Languages = []Snippet{
	{Lang: "curl", Label: "curl"},
	{Lang: "go", Label: "Go"},
	{Lang: "js", Label: "JavaScript"},
	{Lang: "python", Label: "Python"},
	{Lang: "java", Label: "Java"},
}

// SetupSnippets are the lines every example of a partner page assumes: the
// credentials in the environment (curl) or a client built from them.
var SetupSnippets = []Snippet{
	{Lang: "curl", Label: "curl", Code: `# The app page shows these (the sandbox set while you integrate).
export PLATFORM_URL=https://sandbox.example.com APP_ID=10001 APP_KEY=ak_... APP_SECRET=as_...
# The signatures are computed with openssl (any 1.1 or 3.x, or LibreSSL).`},
	{Lang: "go", Label: "Go", Code: `import partneropen "github.com/healthtech/partner-open-platform/sdk/go"

client, err := partneropen.NewClient(partneropen.WithBaseURL(os.Getenv("PLATFORM_URL")),
	partneropen.WithCredentials(os.Getenv("APP_ID"), os.Getenv("APP_KEY"), os.Getenv("APP_SECRET")))
if err != nil {
	return err
}
// The examples run inside a func(ctx context.Context) error with this client.`},
	{Lang: "js", Label: "JavaScript", Code: `import { PartnerClient, eventTypes, isCataloguedEventType } from "@healthtech/partner-open-platform";

const client = new PartnerClient({
  baseUrl: process.env.PLATFORM_URL,
  appId: Number(process.env.APP_ID), appKey: process.env.APP_KEY, appSecret: process.env.APP_SECRET,
});`},
	{Lang: "python", Label: "Python", Code: `import os
from partner_open_platform import PartnerClient, EVENT_CATALOG, is_catalogued_event_type

client = PartnerClient(os.environ["PLATFORM_URL"], app_id=int(os.environ["APP_ID"]),
                       app_key=os.environ["APP_KEY"], app_secret=os.environ["APP_SECRET"])`},
	{Lang: "java", Label: "Java", Code: `import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.model.*;
import com.healthtech.partneropen.server.PartnerClient;
import com.healthtech.partneropen.webhook.EventTypes;

PartnerClient client = PartnerClient.builder(System.getenv("PLATFORM_URL"))
    .appId(System.getenv("APP_ID")).appKey(System.getenv("APP_KEY")).appSecret(System.getenv("APP_SECRET")).build();`},
}

var reqWord = regexp.MustCompile(`\breq\b`)

// addSnippets gives every partner operation its curl example and one
// example per SDK.
func (ref *Reference) addSnippets() error {
	for ti := range ref.Tags {
		for oi := range ref.Tags[ti].Operations {
			o := &ref.Tags[ti].Operations[oi]
			if !o.Partner {
				continue
			}
			call, ok := sdkCalls[o.OperationID]
			if !ok {
				return fmt.Errorf("apiref: partner operation %s (%s %s) has no SDK example", o.OperationID, o.Method, o.Path)
			}
			o.Snippets = []Snippet{{Lang: "curl", Label: "curl", Code: curl(*o)}}
			for _, l := range Languages[1:] {
				code := map[string]string{"go": call.Go, "js": call.JS, "python": call.Python, "java": call.Java}[l.Lang]
				o.Snippets = append(o.Snippets, Snippet{Lang: l.Lang, Label: l.Label, Code: sdkSnippet(l.Lang, code, *o)})
			}
		}
	}
	return nil
}

// sdkSnippet puts the request example before the call when the call uses
// it, and the error check after a Go call.
func sdkSnippet(lang, call string, o Operation) string {
	var b strings.Builder
	if reqWord.MatchString(call) && o.reqExample != nil {
		compact, _ := json.Marshal(o.reqExample)
		switch lang {
		case "go":
			fmt.Fprintf(&b, "var req partneropen.%s\nif err := json.Unmarshal([]byte(`%s`), &req); err != nil {\n\treturn err\n}\n", o.reqModel, jsLiteral(o.reqExample))
		case "js":
			fmt.Fprintf(&b, "const req = %s;\n", jsLiteral(o.reqExample))
		case "python":
			fmt.Fprintf(&b, "req = %s\n", pyLiteral(o.reqExample, ""))
		case "java":
			fmt.Fprintf(&b, "%s req = %s.fromJson(Json.parse(%s));\n", o.reqModel, o.reqModel, javaJSON(o.reqExample, compact))
		}
	}
	b.WriteString(call)
	if lang == "go" {
		switch {
		case strings.HasPrefix(lastLine(call), "res, err :="):
			b.WriteString("\nif err != nil {\n\treturn err\n}\nfmt.Printf(\"%+v\\n\", *res)")
		case strings.HasPrefix(call, "err :="):
			b.WriteString("\nif err != nil {\n\treturn err\n}")
		}
	}
	return b.String()
}

func lastLine(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }

// javaJSON is the example as a Java string expression (Java 8 has no
// text blocks): one concatenated line per top-level member.
func javaJSON(v any, compact []byte) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) < 2 {
		return strconv.Quote(string(compact))
	}
	keys := sortedKeys(m)
	var b strings.Builder
	b.WriteString(`"{"`)
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		var vb bytes.Buffer
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(m[k])
		member := string(kb) + ":" + strings.TrimSpace(vb.String())
		if i < len(keys)-1 {
			member += ","
		}
		b.WriteString("\n    + " + strconv.Quote(member))
	}
	b.WriteString("\n    + \"}\"")
	return b.String()
}

// jsLiteral is the example as a JavaScript object literal (JSON, indented).
func jsLiteral(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return strings.TrimSpace(buf.String())
}

// pyLiteral is the example as a Python literal (dicts and lists indented
// by four spaces, True/False/None).
func pyLiteral(v any, indent string) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		b, _ := json.Marshal(x)
		return string(b)
	case float64:
		return num(x)
	case map[string]any:
		if len(x) == 0 {
			return "{}"
		}
		keys := sortedKeys(x)
		var b strings.Builder
		b.WriteString("{\n")
		for _, k := range keys {
			kb, _ := json.Marshal(k)
			b.WriteString(indent + "    " + string(kb) + ": " + pyLiteral(x[k], indent+"    ") + ",\n")
		}
		b.WriteString(indent + "}")
		return b.String()
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		var b strings.Builder
		b.WriteString("[\n")
		for _, e := range x {
			b.WriteString(indent + "    " + pyLiteral(e, indent+"    ") + ",\n")
		}
		b.WriteString(indent + "]")
		return b.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// curl is a shell example that really sends the request: the signature
// schemes are computed with openssl (the only tool curl itself lacks), so
// the lines can be pasted as they are once the setup variables are set.
func curl(o Operation) string {
	uri := o.Path
	var query []string
	for _, p := range o.Parameters {
		switch p.In {
		case "path":
			uri = strings.ReplaceAll(uri, "{"+p.Name+"}", url.PathEscape(p.example))
		case "query":
			if p.Required {
				query = append(query, url.QueryEscape(p.Name)+"="+url.QueryEscape(p.example))
			}
		}
	}
	if len(query) > 0 {
		uri += "?" + strings.Join(query, "&")
	}
	idem := false
	for _, p := range o.Parameters {
		if p.In == "header" && strings.EqualFold(p.Name, "Idempotency-Key") {
			idem = true
		}
	}
	var b strings.Builder
	body := ""
	json := o.reqContentType == "application/json" && o.reqExample != nil
	if json {
		body = shellBody(o.reqExample)
	}
	var headers []string
	switch o.Auth {
	case "M":
		if json {
			b.WriteString("# Scheme M: X-Signature is the MD5 of app key, timestamp, app secret and the exact body.\n")
			b.WriteString("BODY=" + body + "\nTS=$(date +%s)\n")
			b.WriteString(`SIG=$(printf '%s' "$APP_KEY$TS$APP_SECRET$BODY" | openssl dgst -md5 | sed 's/^.* //')` + "\n")
		} else {
			b.WriteString("# Scheme M: X-Signature is the MD5 of app key, timestamp and app secret (the body is empty).\n")
			b.WriteString("TS=$(date +%s)\n")
			b.WriteString(`SIG=$(printf '%s' "$APP_KEY$TS$APP_SECRET" | openssl dgst -md5 | sed 's/^.* //')` + "\n")
		}
		headers = []string{`"X-App-Id: $APP_ID"`, `"X-Timestamp: $TS"`, `"X-Signature: $SIG"`}
	case "H":
		b.WriteString("# Scheme H: X-Signature is the HMAC-SHA256 (key: app secret) of method, URI, timestamp, nonce and body SHA-256.\n")
		if json {
			b.WriteString("BODY=" + body + "\n")
		} else {
			b.WriteString("BODY=''\n")
		}
		b.WriteString("URI='" + uri + "'\nTS=$(date +%s) NONCE=$(openssl rand -hex 16)\n")
		b.WriteString(`BODY_SHA=$(printf '%s' "$BODY" | openssl dgst -sha256 | sed 's/^.* //')` + "\n")
		b.WriteString(`SIG=$(printf '%s\n%s\n%s\n%s\n%s' ` + o.Method + ` "$URI" "$TS" "$NONCE" "$BODY_SHA" | openssl dgst -sha256 -hmac "$APP_SECRET" | sed 's/^.* //')` + "\n")
		headers = []string{`"X-App-Key: $APP_KEY"`, `"X-Timestamp: $TS"`, `"X-Nonce: $NONCE"`, `"X-Signature: $SIG"`}
	case "basic":
		headers = nil
	case "bearer":
		b.WriteString("# ACCESS_TOKEN comes from POST /oauth/token (see the oauth page); it lives 2 hours.\n")
		headers = []string{`"Authorization: Bearer $ACCESS_TOKEN"`, `"X-App-Key: $APP_KEY"`}
	}
	target := `"$PLATFORM_URL` + uri + `"`
	if o.Auth == "H" {
		target = `"$PLATFORM_URL$URI"`
	}
	line := "curl -sS"
	if o.Method != "GET" {
		line += " -X " + o.Method
	}
	line += " " + target
	if o.Auth == "basic" {
		line += ` -u "$APP_KEY:$APP_SECRET"`
	}
	parts := []string{line}
	if len(headers) > 0 {
		parts = append(parts, "-H "+strings.Join(headers, " -H "))
	}
	if idem {
		parts = append(parts, `-H "Idempotency-Key: $(openssl rand -hex 16)"`)
	}
	switch {
	case json:
		parts = append(parts, `-H "Content-Type: application/json" --data-binary "$BODY"`)
	case o.reqExample != nil && o.reqContentType == "application/x-www-form-urlencoded":
		m, _ := o.reqExample.(map[string]any)
		var ds []string
		for _, k := range sortedKeys(m) {
			ds = append(ds, "--data-urlencode "+shellQuote(k+"="+fmt.Sprint(m[k])))
		}
		parts = append(parts, strings.Join(ds, " "))
	}
	b.WriteString(strings.Join(parts, " \\\n  "))
	return b.String()
}

// shellBody is the example as one line of JSON in single quotes; an app
// key in the example becomes the caller's own ($APP_KEY), since the
// platform checks that it names the signing app.
func shellBody(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(withAppKey(v))
	s := strings.TrimSpace(buf.String())
	s = shellQuote(s)
	return strings.ReplaceAll(s, appKeyMark, `'"$APP_KEY"'`)
}

const appKeyMark = "@@APP_KEY@@"

func withAppKey(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		if k == "appKey" || k == "app_key" {
			if _, isString := e.(string); isString {
				e = appKeyMark
			}
		}
		out[k] = e
	}
	return out
}

// shellQuote wraps s in single quotes for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// exampleValue is a parameter's value in the examples: the document's
// example, else pathExamples', else one of its type.
func exampleValue(name string, doc any, typ string) string {
	if doc != nil {
		return fmt.Sprint(doc)
	}
	if v, ok := pathExamples[name]; ok {
		return v
	}
	if strings.HasPrefix(typ, "integer") || strings.HasPrefix(typ, "number") {
		return "1"
	}
	return "example"
}

// usedSchemes lists the security scheme names that ops use, sorted.
func usedSchemes(tags []Tag) map[string]bool {
	set := map[string]bool{}
	for _, t := range tags {
		for _, o := range t.Operations {
			for _, s := range o.Security {
				for _, n := range s.Schemes {
					set[n] = true
				}
			}
		}
	}
	return set
}

package harness

import (
	"bytes"
	"net/http"
	"net/url"
	"testing"
)

// As sends an admin request with an operator's own token.
func (p *Platform) As(token, method, path string, body any, header ...string) Response {
	p.T.Helper()
	req, err := http.NewRequest(method, p.Srv.URL+path, bytes.NewReader(Encode(p.T, body)))
	if err != nil {
		p.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return p.Send(req)
}

// Operator creates a named operator and returns its id and token.
func (p *Platform) Operator(name, role string) (int64, string) {
	p.T.Helper()
	res := p.Admin("POST", "/admin/v1/operators", map[string]any{"name": name, "role": role})
	if res.Status != http.StatusCreated {
		p.T.Fatalf("create operator: %d %s", res.Status, res.Raw)
	}
	var op struct {
		ID    int64  `json:"operator_id"`
		Token string `json:"token"`
	}
	res.Data(p.T, &op)
	return op.ID, op.Token
}

func ExpectCode(t *testing.T, what string, res Response, status int, code string) {
	t.Helper()
	if res.Status != status || res.Code() != code {
		t.Fatalf("%s: %d %s, want %d %s", what, res.Status, res.Raw, status, code)
	}
}

// LastActor is the metadata actor of a stream's last event.
func (p *Platform) LastActor(stream string) string {
	p.T.Helper()
	var h struct {
		Events []struct {
			Metadata struct {
				Actor string `json:"actor"`
			} `json:"metadata"`
		} `json:"events"`
	}
	p.Admin("GET", "/admin/v1/history?stream="+url.QueryEscape(stream), nil).Data(p.T, &h)
	if len(h.Events) == 0 {
		p.T.Fatalf("no events in %s", stream)
	}
	return h.Events[len(h.Events)-1].Metadata.Actor
}

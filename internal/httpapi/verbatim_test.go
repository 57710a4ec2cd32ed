package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestVerbatimReachesTheClientUnchanged(t *testing.T) {
	raw := "{\"b\" : 1,\n  \"a\":123456789012345678901234567890.5, \"h\":\"<&>\",\"u\":\"\\u00e9\"}"
	w := httptest.NewRecorder()
	OK(w, 200, map[string]any{"raw_data": Verbatim(raw), "list": []any{Verbatim("[1, 2]"), "x"}, "none": Verbatim(nil), "text": "verbatim-"})
	body := w.Body.String()
	for _, want := range []string{`"raw_data":` + raw, `"list":[[1, 2],"x"]`, `"none":null`, `"text":"verbatim-"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("body %s lacks %s", body, want)
		}
	}
}

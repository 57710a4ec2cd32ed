package portal

import (
	"net/http"
	"sync"

	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/portal/apiref"
)

// The API reference and the request signer are public pages: the OpenAPI
// document they render is already public at /openapi.yaml, a partner reads
// the reference before having an account, and the signer runs entirely in
// the browser with credentials the visitor types (nothing is read from the
// session, so there is nothing to protect by signing in).
func init() {
	addRoutes(func(s *Server) {
		s.Public("GET /portal/reference", s.referencePage)
		s.Public("GET /portal/reference/signer", s.signerPage)
	})
}

var (
	referenceOnce   sync.Once
	referenceBodies apiref.Bodies
	referenceErr    error
)

// reference renders the bodies on first use: about a second of work that
// a node whose portal never shows the reference should not pay at start-up,
// and the same result for every request since the document is embedded.
func reference() (apiref.Bodies, error) {
	referenceOnce.Do(func() {
		referenceBodies, referenceErr = apiref.Render(openapi.Spec, "/portal/assets")
	})
	return referenceBodies, referenceErr
}

func (s *Server) referencePage(w http.ResponseWriter, r *http.Request) {
	b, err := reference()
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Render(w, r, http.StatusOK, "reference.html", b.Index)
}

func (s *Server) signerPage(w http.ResponseWriter, r *http.Request) {
	b, err := reference()
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Render(w, r, http.StatusOK, "reference_signer.html", b.Signer)
}

package portal

import (
	"net/http"
	"sync"

	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/portal/apiref"
)

// The partners' API reference and the request signer are public pages:
// the OpenAPI document they render is already public at /openapi.yaml, a
// partner reads the reference before having an account, and the signer
// runs entirely in the browser with credentials the visitor types (nothing
// is read from the session, so there is nothing to protect by signing
// in). The operators' reference (admin, uploader, internal and node
// operations) is shown to signed-in operators only, beside the other ops
// pages, and no partner page links to it.
func init() {
	addRoutes(func(s *Server) {
		s.Public("GET /portal/reference", s.referencePage)
		s.Public("GET /portal/reference/signer", s.signerPage)
		s.Public("GET /portal/reference/{page}", s.referenceSubpage)
		s.Operator("GET /portal/ops/reference", s.opsReferencePage)
		s.Operator("GET /portal/ops/reference/{page}", s.opsReferenceSubpage)
	})
}

// The references' paths.
const (
	referenceBase    = "/portal/reference"
	opsReferenceBase = "/portal/ops/reference"
)

var (
	referenceOnce   sync.Once
	referenceBodies apiref.Bodies
	referenceErr    error
)

// reference renders the pages on first use: about a second of work that
// a node whose portal never shows the reference should not pay at start-up,
// and the same result for every request since the document is embedded.
func reference() (apiref.Bodies, error) {
	referenceOnce.Do(func() {
		referenceBodies, referenceErr = apiref.Render(openapi.Spec, "/portal/assets", referenceBase, opsReferenceBase)
	})
	return referenceBodies, referenceErr
}

// referenceView is what reference_page.html shows.
type referenceView struct {
	Title string // the h1
	Body  any
}

func (s *Server) referencePage(w http.ResponseWriter, r *http.Request) {
	b, err := reference()
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Render(w, r, http.StatusOK, "reference_page.html", referenceView{Title: "API reference", Body: b.Index})
}

func (s *Server) referenceSubpage(w http.ResponseWriter, r *http.Request) {
	b, err := reference()
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	p, ok := b.Pages[r.PathValue("page")]
	if !ok {
		s.NotFound(w, r)
		return
	}
	s.Render(w, r, http.StatusOK, "reference_page.html", referenceView{Title: p.Title + " · API reference", Body: p.Body})
}

func (s *Server) opsReferencePage(w http.ResponseWriter, r *http.Request) {
	b, err := reference()
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Render(w, r, http.StatusOK, "reference_page.html", referenceView{Title: "Operators' API reference", Body: b.OpsIndex})
}

func (s *Server) opsReferenceSubpage(w http.ResponseWriter, r *http.Request) {
	b, err := reference()
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	p, ok := b.OpsPages[r.PathValue("page")]
	if !ok {
		s.NotFound(w, r)
		return
	}
	s.Render(w, r, http.StatusOK, "reference_page.html", referenceView{Title: p.Title + " · Operators' API reference", Body: p.Body})
}

func (s *Server) signerPage(w http.ResponseWriter, r *http.Request) {
	b, err := reference()
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Render(w, r, http.StatusOK, "reference_signer.html", b.Signer)
}

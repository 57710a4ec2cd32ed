package portal

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"sync"

	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/portal/apiref"
)

// referenceTemplates are this part's page bodies (API reference, signer).
//
//go:embed templates/reference_*.html
var referenceTemplates embed.FS

// referenceAssets is where the portal serves portal/assets/*.
const referenceAssets = "/portal/assets"

// referenceBodies are the API reference's two page bodies, rendered once:
// the OpenAPI document is embedded in the binary, so they are the same for
// every request and every visitor.
type referenceBodies struct {
	Index  template.HTML
	Signer template.HTML
}

var (
	referenceOnce   sync.Once
	referenceCached referenceBodies
	referenceErr    error
)

// loadReference renders the bodies on first use (about a second of work
// that a node which never shows the reference should not pay at start-up).
func loadReference() (referenceBodies, error) {
	referenceOnce.Do(func() {
		referenceCached, referenceErr = renderReference(openapi.Spec)
	})
	return referenceCached, referenceErr
}

// renderReference builds the reference from an OpenAPI document.
func renderReference(spec []byte) (referenceBodies, error) {
	ref, err := apiref.Build(spec)
	if err != nil {
		return referenceBodies{}, fmt.Errorf("portal: API reference: %w", err)
	}
	tpl, err := template.ParseFS(referenceTemplates, "templates/reference_*.html")
	if err != nil {
		return referenceBodies{}, fmt.Errorf("portal: API reference templates: %w", err)
	}
	hPaths, err := json.Marshal(ref.SchemeHPaths)
	if err != nil {
		return referenceBodies{}, fmt.Errorf("portal: API reference: %w", err)
	}
	data := struct {
		Ref          *apiref.Reference
		Rules        []apiref.SigningRule
		SchemeHPaths string
		Assets       string
	}{ref, apiref.SigningRules, string(hPaths), referenceAssets}
	var out referenceBodies
	for name, dst := range map[string]*template.HTML{"reference_index": &out.Index, "reference_signer": &out.Signer} {
		var b bytes.Buffer
		if err := tpl.ExecuteTemplate(&b, name, data); err != nil {
			return referenceBodies{}, fmt.Errorf("portal: API reference %s: %w", name, err)
		}
		*dst = template.HTML(b.String()) //nolint:gosec // produced by html/template
	}
	return out, nil
}

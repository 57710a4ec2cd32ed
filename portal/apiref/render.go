package apiref

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
)

//go:embed templates/*.html
var templateFS embed.FS

// Bodies are the API reference's two page bodies, for the portal to place
// inside its layout: the reference itself and the request signer.
type Bodies struct {
	Index  template.HTML
	Signer template.HTML
}

// Render builds the reference from an OpenAPI document and renders both
// bodies; assets is the URL prefix the portal serves signer.js under. The
// result depends only on the document, so a caller renders it once.
func Render(spec []byte, assets string) (Bodies, error) {
	ref, err := Build(spec)
	if err != nil {
		return Bodies{}, err
	}
	tpl, err := template.ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return Bodies{}, fmt.Errorf("apiref: templates: %w", err)
	}
	hPaths, err := json.Marshal(ref.SchemeHPaths)
	if err != nil {
		return Bodies{}, fmt.Errorf("apiref: %w", err)
	}
	data := struct {
		Ref          *Reference
		Rules        []SigningRule
		SchemeHPaths string
		Assets       string
	}{ref, SigningRules, string(hPaths), assets}
	var out Bodies
	for name, dst := range map[string]*template.HTML{"index": &out.Index, "signer": &out.Signer} {
		var b bytes.Buffer
		if err := tpl.ExecuteTemplate(&b, name, data); err != nil {
			return Bodies{}, fmt.Errorf("apiref: render %s: %w", name, err)
		}
		*dst = template.HTML(b.String()) //nolint:gosec // produced by html/template from escaped data
	}
	return out, nil
}

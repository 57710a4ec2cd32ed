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

// Page is one page of a reference: its title and body, for the portal
// to place inside its layout.
type Page struct {
	Title string
	Body  template.HTML
}

// Bodies are the API references' pages: the partners' (an index, one
// page per tag, the webhook events and the schemas), the request signer,
// and the operators' (an index, one page per tag and the schemas).
type Bodies struct {
	Index  template.HTML
	Signer template.HTML
	// Pages are the partners' pages below the index, by path segment
	// (the tag's slug, "webhook-events", "schemas").
	Pages map[string]Page
	// OpsIndex and OpsPages are the operators' reference.
	OpsIndex template.HTML
	OpsPages map[string]Page
}

// Render builds the reference from an OpenAPI document and renders every
// page; assets is the URL prefix the portal serves its scripts under,
// base and opsBase the partners' and the operators' reference paths. The
// result depends only on the document, so a caller renders it once.
func Render(spec []byte, assets, base, opsBase string) (Bodies, error) {
	ref, err := Build(spec)
	if err != nil {
		return Bodies{}, err
	}
	hPaths, err := json.Marshal(ref.SchemeHPaths)
	if err != nil {
		return Bodies{}, fmt.Errorf("apiref: %w", err)
	}
	out := Bodies{Pages: map[string]Page{}, OpsPages: map[string]Page{}}
	type data struct {
		Ref          *Reference
		A            Audience
		Tag          *Tag
		Partner      bool
		Rules        []SigningRule
		Setup        []Snippet
		SchemeHPaths string
		Assets       string
	}
	for _, side := range []struct {
		partner bool
		base    string
		a       Audience
		index   *template.HTML
		pages   map[string]Page
	}{
		{true, base, ref.Partners(), &out.Index, out.Pages},
		{false, opsBase, ref.Operators(), &out.OpsIndex, out.OpsPages},
	} {
		b := side.base
		tpl, err := template.New("").Funcs(template.FuncMap{"base": func() string { return b }, "slug": slug}).ParseFS(templateFS, "templates/*.html")
		if err != nil {
			return Bodies{}, fmt.Errorf("apiref: templates: %w", err)
		}
		d := data{Ref: ref, A: side.a, Partner: side.partner, Rules: SigningRules, Setup: SetupSnippets, SchemeHPaths: string(hPaths), Assets: assets}
		exec := func(name string, d data) (template.HTML, error) {
			var buf bytes.Buffer
			if err := tpl.ExecuteTemplate(&buf, name, d); err != nil {
				return "", fmt.Errorf("apiref: render %s: %w", name, err)
			}
			return template.HTML(buf.String()), nil //nolint:gosec // produced by html/template from escaped data
		}
		indexName := "opsindex"
		if side.partner {
			indexName = "index"
			if out.Signer, err = exec("signer", d); err != nil {
				return Bodies{}, err
			}
			body, err := exec("webhooks", d)
			if err != nil {
				return Bodies{}, err
			}
			side.pages["webhook-events"] = Page{Title: "Webhook events", Body: body}
		}
		if *side.index, err = exec(indexName, d); err != nil {
			return Bodies{}, err
		}
		body, err := exec("schemas", d)
		if err != nil {
			return Bodies{}, err
		}
		side.pages["schemas"] = Page{Title: "Schemas", Body: body}
		for i := range side.a.Tags {
			t := &side.a.Tags[i]
			td := d
			td.Tag = t
			body, err := exec("tag", td)
			if err != nil {
				return Bodies{}, err
			}
			s := slug(t.Name)
			if _, taken := side.pages[s]; taken {
				return Bodies{}, fmt.Errorf("apiref: tag %q has the path of another page", t.Name)
			}
			side.pages[s] = Page{Title: t.Name, Body: body}
		}
	}
	return out, nil
}

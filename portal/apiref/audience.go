package apiref

import (
	"slices"
	"strings"
)

// partnerSchemes are the credentials a partner app holds: scheme M (whose
// first header is AppId), scheme H and the OAuth client and token. The
// SDKs' generators call an operation secured by one of them a partner
// operation; the reference draws the same line, so every operation a
// partner page lists has an SDK method.
var partnerSchemes = map[string]bool{"AppId": true, "schemeH": true, "oauthClient": true, "oauthBearer": true}

// IsPartner says whether an operation belongs in the partners' reference:
// one of its security requirements is a partner credential, or it needs
// no credential and lives under the partner prefix /open/v1/ (the event
// catalog). Everything else (operator token, uploader and internal tokens,
// the node's endpoints, the calls the platform's own measurement plugin
// makes) is in the operators' reference.
func IsPartner(path string, security []SecurityUse) bool {
	for _, s := range security {
		for _, n := range s.Schemes {
			if partnerSchemes[n] {
				return true
			}
		}
	}
	if !strings.HasPrefix(path, "/open/v1/") {
		return false
	}
	for _, s := range security {
		if len(s.Schemes) > 0 {
			return false
		}
	}
	return true
}

// authKind is the credential a partner operation's examples use: the
// first requirement that is a partner credential (scheme M where scheme H
// is also accepted, as the contract states it).
func authKind(security []SecurityUse) string {
	for _, s := range security {
		switch {
		case slices.Contains(s.Schemes, "AppId"):
			return "M"
		case slices.Contains(s.Schemes, "schemeH"):
			return "H"
		case slices.Contains(s.Schemes, "oauthClient"):
			return "basic"
		case slices.Contains(s.Schemes, "oauthBearer"):
			return "bearer"
		}
	}
	return ""
}

// Audience is one reference's share of the document: its tags (each
// with only the audience's operations), the security schemes those
// operations use, the named schemas they reach and, for partners, the
// outgoing webhooks.
type Audience struct {
	Tags     []Tag
	Security []SecurityScheme
	Schemas  []Schema
	Webhooks []Operation
}

// Partners is the partners' reference: every partner operation under its
// first tag, in the document's tag order.
func (ref *Reference) Partners() Audience {
	var a Audience
	for _, t := range ref.Tags {
		nt := t
		nt.Operations = nil
		for _, o := range t.Operations {
			if o.Partner {
				nt.Operations = append(nt.Operations, o)
			}
		}
		nt.Omitted = len(t.Operations) - len(nt.Operations)
		if len(nt.Operations) > 0 {
			a.Tags = append(a.Tags, nt)
		}
	}
	a.Webhooks = ref.Webhooks
	ref.complete(&a)
	return a
}

// Operators is the operators' reference: every other operation. An
// operation tagged admin and a subject (orders, benefits, ...) is listed
// under the subject, so the admin tag does not hold half the document.
func (ref *Reference) Operators() Audience {
	var a Audience
	index := map[string]int{}
	for _, t := range ref.declared {
		index[t.Name] = len(a.Tags)
		nt := t
		nt.Operations = nil
		a.Tags = append(a.Tags, nt)
	}
	for _, t := range ref.Tags {
		for _, o := range t.Operations {
			if o.Partner {
				continue
			}
			name := t.Name
			if len(o.Tags) > 1 && o.Tags[0] == "admin" {
				name = o.Tags[1]
			}
			i, ok := index[name]
			if !ok {
				i = len(a.Tags)
				index[name] = i
				a.Tags = append(a.Tags, Tag{Name: name, Anchor: "tag-" + slug(name)})
			}
			a.Tags[i].Operations = append(a.Tags[i].Operations, o)
		}
	}
	kept := a.Tags[:0]
	for _, t := range a.Tags {
		if len(t.Operations) > 0 {
			kept = append(kept, t)
		}
	}
	a.Tags = kept
	ref.complete(&a)
	return a
}

// complete adds the security schemes and the schemas the audience's
// operations and webhooks reach.
func (ref *Reference) complete(a *Audience) {
	used := usedSchemes(a.Tags)
	for _, s := range ref.Security {
		if used[s.Name] {
			a.Security = append(a.Security, s)
		}
	}
	byName := map[string]*Schema{}
	for i := range ref.Schemas {
		byName[ref.Schemas[i].Name] = &ref.Schemas[i]
	}
	reached := map[string]bool{}
	var reach func(links []SchemaLink, fields []Field)
	reach = func(links []SchemaLink, fields []Field) {
		for _, f := range fields {
			if f.Link != nil {
				links = append(links, *f.Link)
			}
		}
		for _, l := range links {
			if reached[l.Name] {
				continue
			}
			reached[l.Name] = true
			if s := byName[l.Name]; s != nil {
				reach(s.Extends, s.Fields)
			}
		}
	}
	ops := slices.Clone(a.Webhooks)
	for _, t := range a.Tags {
		ops = append(ops, t.Operations...)
	}
	for _, o := range ops {
		if o.Request != nil {
			reach(o.Request.Extends, o.Request.Fields)
		}
		for _, r := range o.Responses {
			if r.Body != nil {
				reach(r.Body.Extends, r.Body.Fields)
			}
		}
	}
	for _, s := range ref.Schemas {
		if reached[s.Name] {
			a.Schemas = append(a.Schemas, s)
		}
	}
}

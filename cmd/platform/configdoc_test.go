package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

//go:generate go test -run ^TestConfigurationDocIsCurrent$ -update-config-doc .

// updateConfigDoc rewrites the generated part of docs/configuration.md from
// the settings table instead of comparing it.
var updateConfigDoc = flag.Bool("update-config-doc", false, "rewrite the generated settings table of docs/configuration.md")

const (
	configDocPath  = "../../docs/configuration.md"
	configDocBegin = "<!-- BEGIN GENERATED SETTINGS: go generate ./cmd/platform -->"
	configDocEnd   = "<!-- END GENERATED SETTINGS -->"
)

// settingsMarkdown renders the settings table loadConfig reads, the same
// one -help prints, as a Markdown table: one row per variable.
func settingsMarkdown(t *testing.T) string {
	c, err := loadConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatalf("loadConfig with no settings: %v", err)
	}
	cell := func(s string) string {
		if s == "" {
			return ""
		}
		return strings.ReplaceAll(s, "|", `\|`)
	}
	code := func(s string) string {
		if s == "" {
			return ""
		}
		return "`" + s + "`"
	}
	var b strings.Builder
	b.WriteString("| Variable | Flag | Default | Meaning | Accepts |\n|---|---|---|---|---|\n")
	for _, s := range c.settings {
		flagName := ""
		if s.flag != "" {
			flagName = "-" + s.flag
		}
		def := s.def
		if s.secret {
			def = "" // secrets have no default value worth printing
		}
		usage := s.usage
		if s.secret {
			usage = strings.TrimSpace(usage + " (secret: never echoed or logged)")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", code(s.env), code(flagName), code(cell(def)), cell(usage), cell(s.accepts))
	}
	return b.String()
}

// TestConfigurationDocIsCurrent fails when docs/configuration.md's settings
// table differs from the settings cmd/platform reads, so a new, renamed or
// re-defaulted setting cannot land without its documentation.
func TestConfigurationDocIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte(configDocBegin))
	j := bytes.Index(doc, []byte(configDocEnd))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q and %q", configDocPath, configDocBegin, configDocEnd)
	}
	want := settingsMarkdown(t)
	got := string(doc[i+len(configDocBegin) : j])
	if strings.TrimSpace(got) == strings.TrimSpace(want) {
		return
	}
	if *updateConfigDoc {
		var out bytes.Buffer
		out.Write(doc[:i+len(configDocBegin)])
		out.WriteString("\n" + want)
		out.Write(doc[j:])
		if err := os.WriteFile(configDocPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with cmd/platform's settings: run `go generate ./cmd/platform`.\nwant the table:\n%s", configDocPath, want)
}

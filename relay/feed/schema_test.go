package feed

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the schema files from the table")

// TestSchemaFilesMatchTable keeps the committed contract and the table in
// step: a table change fails here until the files are regenerated, so the
// contract change is visible in review.
func TestSchemaFilesMatchTable(t *testing.T) {
	for _, typ := range PublishedTypes() {
		want, err := generateSchema(typ)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("schemas", SchemaFile(typ, table[typ].version))
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run with -update to write it)", typ, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the table; a published version's fields never change (bump the version), then run with -update", path)
		}
	}
	if len(PublishedTypes()) != len(table) {
		t.Fatalf("publishedOrder lists %d types, the table %d", len(PublishedTypes()), len(table))
	}
	files, _ := filepath.Glob("schemas/*.json")
	if !*update && len(files) < len(table) {
		t.Fatalf("%d schema files for %d published types", len(files), len(table))
	}
}

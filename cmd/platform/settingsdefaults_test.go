package main

import (
	"reflect"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestSettingsDefaultsAreTheNodes: every default the settings table gives a
// node.Config field (and so prints in -help and docs/configuration.md) is
// the one node.Open would give the field left zero, so a default changed
// in internal/node/defaults.go cannot leave the table, the help text and
// the docs saying another.
func TestSettingsDefaultsAreTheNodes(t *testing.T) {
	table := mustLoad(t, nil).Config
	opened := node.Config{}.WithDefaults()
	compared := compareDefaults(t, "", reflect.ValueOf(table), reflect.ValueOf(opened))
	// The defaults both sides set: a test that compares nothing cannot fail.
	if compared < 12 {
		t.Fatalf("compared only %d defaults", compared)
	}
}

// compareDefaults compares the fields of two structs that both set (a
// field the node leaves zero is defaulted by its port, and a field the
// table leaves zero takes the node's default), recursing into structs, and
// returns how many it compared. Functions, pointers and interfaces (the
// logger, the clock) are the process's, not defaults.
func compareDefaults(t *testing.T, prefix string, table, opened reflect.Value) int {
	t.Helper()
	n := 0
	for i := range table.NumField() {
		f := table.Type().Field(i)
		name := prefix + f.Name
		a, b := table.Field(i), opened.Field(i)
		switch f.Type.Kind() {
		case reflect.Func, reflect.Pointer, reflect.Interface, reflect.Slice:
			continue
		case reflect.Struct:
			n += compareDefaults(t, name+".", a, b)
			continue
		}
		if a.IsZero() || b.IsZero() {
			continue
		}
		n++
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			t.Errorf("%s: the settings table's default is %v, node.Open's %v", name, a.Interface(), b.Interface())
		}
	}
	return n
}

package apiref

import (
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/openapi"
)

var (
	servedOnce sync.Once
	servedRef  *Reference
	servedErr  error
)

// ServedReference is the reference of the served document, built once for
// the test binary, internal and external tests alike (loading 12,000 lines
// of YAML is the slow part, more so under -race); the tests only read it.
func ServedReference(t *testing.T) *Reference {
	t.Helper()
	servedOnce.Do(func() { servedRef, servedErr = Build(openapi.Spec) })
	if servedErr != nil {
		t.Fatal(servedErr)
	}
	return servedRef
}

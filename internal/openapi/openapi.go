// Package openapi embeds the platform's OpenAPI 3.0 description, served at
// /openapi.yaml and used by the tests to validate every response they get.
package openapi

import _ "embed"

// Spec is embedded so the node serves, and tests validate against, exactly the contract checked into this package.
//
//go:embed openapi.yaml
var Spec []byte

// Command gen regenerates models_gen.go from the platform's OpenAPI file:
//
//	go run ./internal/gen/cmd ../../internal/openapi/openapi.yaml models_gen.go
package main

import (
	"fmt"
	"os"

	"github.com/healthtech/partner-open-platform/sdk/go/internal/gen"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen OPENAPI_YAML OUT_GO")
		os.Exit(2)
	}
	d, err := gen.Load(os.Args[1])
	if err == nil {
		var src []byte
		if src, err = gen.Generate(d); err == nil {
			err = os.WriteFile(os.Args[2], src, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

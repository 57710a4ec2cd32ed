package eventtypes

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// The generators and samples, for this package's external tests.
var (
	GenerateSchema = generateSchema
	Sample         = sample
	Samples        = samples
	SampleTime     = func() time.Time { return sampleAt }
)

// Names returns the names of every catalogued type, in the catalog's order.
func Names() []string {
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = t.Name
	}
	return out
}

// samples returns each type's sample event of its current version, which
// tests render to check the renderer against the catalog.
func samples() map[string]events.Payload {
	out := make(map[string]events.Payload, len(table))
	for _, e := range table {
		out[e.name] = e.versions[len(e.versions)-1].sample
	}
	return out
}

// generateSchema renders version v of the named type as JSON Schema draft
// 2020-12, the content of its checked-in file.
func generateSchema(name string, v int) ([]byte, error) {
	for _, e := range table {
		if e.name != name {
			continue
		}
		if v < 1 || v > len(e.versions) {
			return nil, fmt.Errorf("eventtypes: %s has no version %d", name, v)
		}
		body := e.versions[v-1].body(name)
		s := node{
			{name: "$schema", value: "https://json-schema.org/draft/2020-12/schema"},
			{name: "$id", value: SchemaID + SchemaFile(name, v)},
			{name: "title", value: fmt.Sprintf("%s/v%d", name, v)},
			{name: "description", value: e.title + ". " + e.description},
		}
		s = append(s, body...)
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	}
	return nil, fmt.Errorf("eventtypes: %s is not catalogued", name)
}

// sample returns version v's sample event of the named type.
func sample(name string, v int) (events.Payload, bool) {
	for _, e := range table {
		if e.name == name && v >= 1 && v <= len(e.versions) {
			return e.versions[v-1].sample, true
		}
	}
	return nil, false
}

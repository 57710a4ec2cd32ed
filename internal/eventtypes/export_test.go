package eventtypes

import "time"

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

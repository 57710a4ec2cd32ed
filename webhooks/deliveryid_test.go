package webhooks

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/domain"
)

// uuidDeliveryID is the delivery id as the uuid package derived it.
func uuidDeliveryID(appID, endpointID int64, sourceEventID string) string {
	name := strconv.FormatInt(appID, 10) + "/" + sourceEventID
	if endpointID != domain.DefaultEndpointID {
		name = strconv.FormatInt(appID, 10) + "/" + strconv.FormatInt(endpointID, 10) + "/" + sourceEventID
	}
	return uuid.NewSHA1(deliveryNamespace, []byte(name)).String()
}

func checkDeliveryID(t *testing.T, appID, endpointID int64, source string) {
	t.Helper()
	want := uuidDeliveryID(appID, endpointID, source)
	if got := EndpointDeliveryID(appID, endpointID, source); got != want {
		t.Fatalf("EndpointDeliveryID(%d, %d, %q) = %s, want %s", appID, endpointID, source, got, want)
	}
	if endpointID == domain.DefaultEndpointID {
		if got := DeliveryID(appID, source); got != want {
			t.Fatalf("DeliveryID(%d, %q) = %s, want %s", appID, source, got, want)
		}
	}
}

// The delivery ids are the uuid package's version 5 UUIDs of the names
// they always had (every stored delivery's id depends on it): event ids,
// long and odd names, every endpoint, extreme numbers.
func TestDeliveryIDsAreUUIDv5(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	ints := []int64{0, 1, -1, 7, 1<<63 - 1, -1 << 63}
	sources := []string{"", "evt-1", uuid.NewString(), "019a-\xff-汉字", strings.Repeat("x", 127), strings.Repeat("y", 300)}
	for i := 0; i < 2000; i++ {
		src := sources[rng.IntN(len(sources))]
		if rng.IntN(2) == 0 {
			src = uuid.Must(uuid.NewV7()).String()
		}
		app, ep := ints[rng.IntN(len(ints))], ints[rng.IntN(len(ints))]
		if rng.IntN(2) == 0 {
			app, ep = rng.Int64(), rng.Int64N(100)
		}
		checkDeliveryID(t, app, ep, src)
	}
}

// FuzzDeliveryIDIsUUIDv5 is TestDeliveryIDsAreUUIDv5 over the fuzzer's names.
func FuzzDeliveryIDIsUUIDv5(f *testing.F) {
	f.Add(int64(17), int64(0), "0193a4b2-7c1d-7e2f-8a3b-4c5d6e7f8091")
	f.Add(int64(-1), int64(21), strings.Repeat("z", 200))
	f.Fuzz(func(t *testing.T, appID, endpointID int64, source string) {
		checkDeliveryID(t, appID, endpointID, source)
	})
}

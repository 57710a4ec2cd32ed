package webhooks

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/domain"
)

// deliveryNamespace makes delivery ids a pure function of (app, source
// event): the same event seen twice yields the same id.
var deliveryNamespace = uuid.MustParse("6f1c2a52-9d7e-4c0b-8a53-3f0d8d2b7e41")

// DeliveryID derives the stable delivery id of one source event for one
// app's default endpoint.
func DeliveryID(appID int64, sourceEventID string) string {
	return nameUUID(appID, domain.DefaultEndpointID, sourceEventID)
}

// EndpointDeliveryID derives the stable delivery id of one source event for
// one endpoint of an app; the default endpoint's is DeliveryID, so the
// deliveries made before apps had several endpoints keep their ids.
func EndpointDeliveryID(appID, endpointID int64, sourceEventID string) string {
	return nameUUID(appID, endpointID, sourceEventID)
}

// nameUUID is uuid.NewSHA1(deliveryNamespace, name).String() of the name
// "app/source" (default endpoint) or "app/endpoint/source", computed on the
// stack: every delivery derives one or two, and the uuid package's hash and
// string each allocated (TestDeliveryIDsAreUUIDv5 compares the two).
func nameUUID(appID, endpointID int64, sourceEventID string) string {
	var buf [128]byte
	b := append(buf[:0], deliveryNamespace[:]...)
	b = append(strconv.AppendInt(b, appID, 10), '/')
	if endpointID != domain.DefaultEndpointID {
		b = append(strconv.AppendInt(b, endpointID, 10), '/')
	}
	sum := sha1.Sum(append(b, sourceEventID...))
	sum[6] = sum[6]&0x0f | 0x50 // version 5
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	var out [36]byte
	hex.Encode(out[0:8], sum[0:4])
	hex.Encode(out[9:13], sum[4:6])
	hex.Encode(out[14:18], sum[6:8])
	hex.Encode(out[19:23], sum[8:10])
	hex.Encode(out[24:36], sum[10:16])
	out[8], out[13], out[18], out[23] = '-', '-', '-', '-'
	return string(out[:])
}

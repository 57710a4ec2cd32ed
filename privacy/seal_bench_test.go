package privacy

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

// memberUpserted is a member update as a member upsert writes it: the
// member's ten personal paths, four of them set.
const memberUpserted = `{"channel_user_id":"u-1","open_user_id":7,"member":{"member_id":31,"app_user_id":"m-3","app_group_id":10,` +
	`"family_group_id":12,"name":"n-1234","relationship":"SON","gender":null,"birth_date":null,"phone":"13812345678","id_type":null,` +
	`"id_number":null,"height":172,"weight":null,"blood_type":null,"is_default":false},"changed":["name"]}`

// BenchmarkSeal seals a member upsert's event, as every member upsert does
// (ns and allocations per event):
//
//	go test -run '^$' -bench Seal -benchmem ./privacy
func BenchmarkSeal(b *testing.B) {
	s, _ := newStore(b)
	ctx := context.Background()
	id := uuid.NewString()
	if _, err := s.Seal(ctx, "user-7", id, "user.family_member.updated", []byte(memberUpserted)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Seal(ctx, "user-7", id, "user.family_member.updated", []byte(memberUpserted)); err != nil {
			b.Fatal(err)
		}
	}
}

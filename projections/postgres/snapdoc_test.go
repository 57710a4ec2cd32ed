package postgres

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
)

// snapshotDoc is a user_snapshots document (user_snapshot_docs writes it):
// short keys, times in microseconds since the epoch.
type snapshotDoc struct {
	User struct {
		Name         string  `json:"n"`
		Nickname     *string `json:"k"`
		Gender       string  `json:"g"`
		Avatar       *string `json:"a"`
		Phone        *string `json:"p"`
		Email        *string `json:"e"`
		BirthDate    *string `json:"b"`
		Status       string  `json:"s"`
		RegisteredAt int64   `json:"r"`
		UpdatedAt    int64   `json:"t"`
	} `json:"u"`
	Groups []struct {
		ID          int64  `json:"id"`
		AppGroupID  int64  `json:"ag"`
		Name        string `json:"n"`
		MemberCount int    `json:"c"`
		CreatedAt   int64  `json:"cr"`
		UpdatedAt   int64  `json:"t"`
	} `json:"g"`
	Members []struct {
		ID            int64   `json:"id"`
		AppUserID     string  `json:"au"`
		AppGroupID    int64   `json:"ag"`
		FamilyGroupID int64   `json:"fg"`
		Name          string  `json:"n"`
		Relationship  string  `json:"r"`
		Gender        *string `json:"g"`
		BirthDate     *string `json:"b"`
		Phone         *string `json:"p"`
		IDType        *string `json:"it"`
		IDNumber      *string `json:"in"`
		Height        *int64  `json:"h"`
		Weight        *int64  `json:"w"`
		BloodType     *string `json:"bt"`
		IsDefault     bool    `json:"d"`
		UpdatedAt     int64   `json:"t"`
	} `json:"m"`
}

// reflectDecodeSnapshot is the reflection decoder decodeSnapshot replaced; it fills snap from a document, keeping only the members
// updated strictly after q.UpdatedAfter when that is set (as Members does).
func reflectDecodeSnapshot(doc []byte, q projections.SnapshotQuery, openUserID int64, channelUserID string, snap *projections.Snapshot) error {
	var d snapshotDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return fmt.Errorf("decode the snapshot document: %w", err)
	}
	u := d.User
	snap.Found = true
	snap.User = projections.User{
		AppID: q.AppID, OpenUserID: openUserID, ChannelUserID: channelUserID, Name: u.Name, Nickname: u.Nickname, Gender: u.Gender,
		Avatar: u.Avatar, Phone: u.Phone, Email: u.Email, BirthDate: u.BirthDate, Status: u.Status,
		RegisteredAt: micro(u.RegisteredAt), UpdatedAt: micro(u.UpdatedAt),
	}
	snap.Groups = make([]projections.Group, 0, len(d.Groups))
	for _, g := range d.Groups {
		snap.Groups = append(snap.Groups, projections.Group{
			AppID: q.AppID, OpenUserID: openUserID, FamilyGroupID: g.ID, AppGroupID: g.AppGroupID, Name: g.Name,
			MemberCount: g.MemberCount, CreatedAt: micro(g.CreatedAt), UpdatedAt: micro(g.UpdatedAt),
		})
	}
	snap.Members = make([]projections.Member, 0, len(d.Members))
	for _, m := range d.Members {
		at := micro(m.UpdatedAt)
		if !q.UpdatedAfter.IsZero() && !at.After(q.UpdatedAfter) {
			continue
		}
		snap.Members = append(snap.Members, projections.Member{
			AppID: q.AppID, OpenUserID: openUserID, MemberID: m.ID, AppUserID: m.AppUserID, AppGroupID: m.AppGroupID, FamilyGroupID: m.FamilyGroupID,
			Name: m.Name, Relationship: m.Relationship, Gender: m.Gender, BirthDate: m.BirthDate, Phone: m.Phone,
			IDType: m.IDType, IDNumber: m.IDNumber, Height: m.Height, Weight: m.Weight, BloodType: m.BloodType,
			IsDefault: m.IsDefault, UpdatedAt: at,
		})
	}
	return nil
}

// The hand-written document reader decodes what the reflection decoder it
// replaced decoded, field for field: documents as Postgres writes them
// (spaces around colons, arrays over lines), compact ones, keys in another
// order, unknown keys, nulls everywhere, escaped and non-ASCII strings, and
// the updated_after filter on members.
func TestDocScannerDecodesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{"u" : {"n" : "张三", "k" : null, "g" : "male", "a" : null, "p" : "13800138000", "e" : null, "b" : "1990-01-02", "s" : "ACTIVE", "r" : 1767323045123456, "t" : 1767323045123457}, "g" : [{"id" : 5, "ag" : 6, "n" : "家", "c" : 2, "cr" : 1767323045000000, "t" : 1767323046000000}], "m" : [{"id" : 7, "au" : "m7", "ag" : 6, "fg" : 5, "n" : "李四", "r" : "child", "g" : null, "b" : null, "p" : null, "it" : "id_card", "in" : "1101", "h" : 120, "w" : null, "bt" : "O", "d" : true, "t" : 1767323045000001}, ` + "\n" + ` {"id" : 8, "au" : "m8", "ag" : 6, "fg" : 5, "n" : "王五", "r" : "spouse", "g" : "female", "b" : "1991-01-01", "p" : "139", "it" : null, "in" : null, "h" : null, "w" : 5500, "bt" : null, "d" : false, "t" : 1767323047000000}]}`,
		`{"u":{"n":"a\"b\\c\/d\u00e9\n\t\u2028\ud83d\ude42","s":"ERASED","r":-1,"t":0},"g":[],"m":[]}`,
		`{"m":null,"zz":{"x":[1,2.5,{"y":null}],"w":"s"},"g":null,"u":null}`,
		`{"u":{"x":true,"n":"n","r":9},"g":[{"n":"g","id":-3,"extra":[]}],"m":[{"t":1,"id":1},{"t":2,"id":2},{"t":3,"id":3}]}`,
		`  {  }  `,
	}
	for _, after := range []time.Time{{}, time.UnixMicro(1).UTC(), time.UnixMicro(2).UTC(), time.UnixMicro(1767323045000001).UTC()} {
		for i, doc := range docs {
			q := projections.SnapshotQuery{AppID: 3, OpenUserID: 10, UpdatedAfter: after}
			var want, got projections.Snapshot
			if err := reflectDecodeSnapshot([]byte(doc), q, 10, "c", &want); err != nil {
				t.Fatalf("doc %d: reference: %v", i, err)
			}
			if err := decodeSnapshot([]byte(doc), q, 10, "c", &got); err != nil {
				t.Fatalf("doc %d after %v: %v", i, after, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("doc %d after %v:\n got %+v\nwant %+v", i, after, got, want)
			}
		}
	}
	for i, bad := range []string{``, `{`, `{"u":{"n":1}}`, `{"u":{"r":"1"}}`, `{"u":{"r":1.5}}`, `{"m":[{"d":1}]}`, `{"g":[{"id":1}`, `{"u":{"n":"x}}`, `{} {}`, `[]`, `{"u" {}}`, `{"g":[1 2]}`} {
		var snap projections.Snapshot
		if err := decodeSnapshot([]byte(bad), projections.SnapshotQuery{}, 1, "c", &snap); err == nil {
			t.Errorf("bad doc %d %q decoded: %+v", i, bad, snap)
		}
		if err := reflectDecodeSnapshot([]byte(bad), projections.SnapshotQuery{}, 1, "c", &snap); err == nil {
			t.Errorf("bad doc %d %q: the reference decoded it (the case proves nothing)", i, bad)
		}
	}
}

// Random documents, encoded by encoding/json compactly and as Postgres
// spaces them, decode the same through both readers.
func TestDocScannerRandomDocuments(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "\"", "\\", "\x00", "\x1f", "/", "<", "张", "🙂", "\u2028", " ", ":", ",", "{", "]"}
	str := func() string {
		var sb strings.Builder
		for j := rng.IntN(6); j > 0; j-- {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	opt := func() *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		s := str()
		return &s
	}
	optInt := func() *int64 {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := rng.Int64() - rng.Int64()
		return &v
	}
	for i := 0; i < 500; i++ {
		var d snapshotDoc
		d.User.Name, d.User.Nickname, d.User.Gender, d.User.Avatar, d.User.Phone = str(), opt(), str(), opt(), opt()
		d.User.Email, d.User.BirthDate, d.User.Status = opt(), opt(), str()
		d.User.RegisteredAt, d.User.UpdatedAt = rng.Int64N(1<<52)-1<<51, rng.Int64N(1<<52)
		for j := rng.IntN(3); j > 0; j-- {
			d.Groups = append(d.Groups, struct {
				ID          int64  `json:"id"`
				AppGroupID  int64  `json:"ag"`
				Name        string `json:"n"`
				MemberCount int    `json:"c"`
				CreatedAt   int64  `json:"cr"`
				UpdatedAt   int64  `json:"t"`
			}{rng.Int64(), -rng.Int64(), str(), rng.IntN(100), rng.Int64N(1 << 50), rng.Int64N(1 << 50)})
		}
		for j := rng.IntN(4); j > 0; j-- {
			m := struct {
				ID            int64   `json:"id"`
				AppUserID     string  `json:"au"`
				AppGroupID    int64   `json:"ag"`
				FamilyGroupID int64   `json:"fg"`
				Name          string  `json:"n"`
				Relationship  string  `json:"r"`
				Gender        *string `json:"g"`
				BirthDate     *string `json:"b"`
				Phone         *string `json:"p"`
				IDType        *string `json:"it"`
				IDNumber      *string `json:"in"`
				Height        *int64  `json:"h"`
				Weight        *int64  `json:"w"`
				BloodType     *string `json:"bt"`
				IsDefault     bool    `json:"d"`
				UpdatedAt     int64   `json:"t"`
			}{rng.Int64(), str(), rng.Int64(), rng.Int64(), str(), str(), opt(), opt(), opt(), opt(), opt(), optInt(), optInt(), opt(), rng.IntN(2) == 0, rng.Int64N(10)}
			d.Members = append(d.Members, m)
		}
		compact, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		spaced, err := json.MarshalIndent(d, " ", "\t")
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range [][]byte{compact, spaced} {
			q := projections.SnapshotQuery{AppID: 1, UpdatedAfter: []time.Time{{}, time.UnixMicro(4).UTC()}[i%2]}
			var want, got projections.Snapshot
			if err := reflectDecodeSnapshot(doc, q, 2, "c", &want); err != nil {
				t.Fatal(err)
			}
			if err := decodeSnapshot(doc, q, 2, "c", &got); err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:\n got %+v\nwant %+v", doc, got, want)
			}
		}
	}
}

// testdata/snapshot_docs_golden.jsonl holds user_snapshots documents as
// Postgres wrote them (random histories with strings JSON must escape),
// each with the snapshot the reader decoded from it before it moved onto
// events/jsoncodec, with and without an updated_after filter. Documents
// already stored keep decoding to the same snapshot.
func TestStoredSnapshotDocumentsDecodeAsBefore(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/snapshot_docs_golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 10 {
		t.Fatalf("%d golden documents", len(lines))
	}
	for i, line := range lines {
		var g struct {
			Doc          string    `json:"doc"`
			UpdatedAfter time.Time `json:"updated_after"`
			Snapshot     string    `json:"snapshot"`
		}
		if err := json.Unmarshal([]byte(line), &g); err != nil {
			t.Fatal(err)
		}
		var snap projections.Snapshot
		q := projections.SnapshotQuery{AppID: 1, OpenUserID: 4, UpdatedAfter: g.UpdatedAfter}
		if err := decodeSnapshot([]byte(g.Doc), q, 4, "c4", &snap); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if got, _ := json.Marshal(snap); string(got) != g.Snapshot {
			t.Errorf("document %d:\n got %s\nwant %s", i, got, g.Snapshot)
		}
	}
}

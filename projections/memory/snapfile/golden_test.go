package snapfile

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/json"
	"os"
	"testing"
)

// testdata/golden_v3.snap is a snapshot file as the platform wrote it
// (every table of every read model, rows with every field set and rows
// with every field zero, a directory journal), sealed with a fixed test
// key; golden_v3.json is what Read gave for it then. A file already on a
// node's disk keeps restoring to the same rows.
func TestStoredSnapshotFileReadsAsBefore(t *testing.T) {
	block, err := aes.NewCipher([]byte("golden-snapshot-key-32-bytes-ok!"))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	h, images, dirs, err := Read("testdata/golden_v3.snap", aead)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(map[string]any{"header": h, "images": images, "dirs": dirs})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/golden_v3.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("the stored snapshot reads as\n%s\nbefore\n%s", got, want)
	}
	if len(images) != 6 || images[0].Rows() == 0 {
		t.Fatalf("%d images: the golden file holds every read model", len(images))
	}
}

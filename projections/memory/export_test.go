package memory

import (
	"crypto/cipher"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"os"
)

// WriteSnapshotV1 writes a snapshot in the first format (one gob stream
// of every image, then the directories), as nodes before format 2 did, so
// a test can check that such a file is still restored.
func WriteSnapshotV1(path string, h SnapshotHeader, aead cipher.AEAD, images []FamilyImage, dirs []DirectoryImage) error {
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pre := append([]byte(snapshotMagicV1), binary.BigEndian.AppendUint32(nil, uint32(len(head)))...)
	if _, err := f.Write(append(pre, head...)); err != nil {
		return err
	}
	sw := &sealWriter{w: f, aead: aead, head: head}
	enc := gob.NewEncoder(sw)
	for i := range images {
		if err := enc.Encode(&images[i]); err != nil {
			return err
		}
	}
	if err := enc.Encode(dirs); err != nil {
		return err
	}
	return sw.close()
}

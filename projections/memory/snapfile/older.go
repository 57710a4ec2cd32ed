package snapfile

// The writers of the older formats, which nodes before the current
// version wrote: the readers of those formats are tested against them, and
// the in-memory store's snapshotter tests that it rewrites such a file.

import (
	"bytes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"os"
	"reflect"
	"slices"
)

// WriteV1 writes a snapshot in the first format (one gob stream
// of every image, then the directories), as nodes before format 2 did, so
// a test can check that such a file is still restored.
func WriteV1(path string, h Header, aead cipher.AEAD, images []Image, dirs []Directory) error {
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

// WriteV2 writes a snapshot in the second format (each table in
// gob sections of sectionRows rows), as nodes before format 3 did.
func WriteV2(path string, h Header, aead cipher.AEAD, images []Image, dirs []Directory) error {
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pre := append([]byte(snapshotMagicV2), binary.BigEndian.AppendUint32(nil, uint32(len(head)))...)
	if _, err := f.Write(append(pre, head...)); err != nil {
		return err
	}
	sw := &sealWriter{w: f, aead: aead, head: head}
	section := func(owner uint32, fieldIndex uint16, v any) error {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(v); err != nil {
			return err
		}
		var pre [14]byte
		binary.BigEndian.PutUint32(pre[0:], owner)
		binary.BigEndian.PutUint16(pre[4:], fieldIndex)
		binary.BigEndian.PutUint64(pre[6:], uint64(buf.Len()))
		_, err := sw.Write(append(pre[:], buf.Bytes()...))
		return err
	}
	for i := range images {
		// The tables follow ReadModel and Checkpoint in Image, in the
		// order of imageFields.
		v := reflect.ValueOf(images[i])
		for fi := range imageFields {
			rows := v.Field(2 + fi)
			for from := 0; from < rows.Len(); from += sectionRows {
				if err := section(uint32(i), uint16(fi), rows.Slice(from, min(from+sectionRows, rows.Len())).Interface()); err != nil {
					return err
				}
			}
		}
	}
	if err := section(dirsOwner, 0, dirs); err != nil {
		return err
	}
	return sw.close()
}

// WriteV3 writes a snapshot in the third format (the row codec, every
// delivery's body in its row), as nodes before format 4 did.
func WriteV3(path string, h Header, aead cipher.AEAD, images []Image, dirs []Directory) error {
	images = slices.Clone(images)
	for i := range images {
		images[i].BodiesInLog = false
	}
	_, err := write(path, snapshotMagicV3, h, aead, images, dirs, nil)
	return err
}

package snapfile

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"io"
	"runtime"
	"testing"
)

// A restore reads the snapshot through openReader chunk by chunk. It used
// to allocate a sealed and a plaintext buffer for every 1 MB chunk, twice
// the snapshot's size of garbage during a start; it now reuses them, and
// what it reads is still exactly what was written, the last chunk marked.
func TestOpenReaderReusesItsChunkBuffers(t *testing.T) {
	block, err := aes.NewCipher(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	head := []byte("header")
	want := make([]byte, 8*snapshotChunk+12345)
	for i := range want {
		want[i] = byte(i * 31 / 7)
	}
	var sealed bytes.Buffer
	w := &sealWriter{w: &sealed, aead: aead, head: head}
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}

	got := make([]byte, 0, len(want))
	p := make([]byte, 64<<10)
	or := &openReader{r: bytes.NewReader(sealed.Bytes()), aead: aead, head: head}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for {
		n, err := or.Read(p)
		got = append(got, p[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if !bytes.Equal(got, want) || !or.final {
		t.Fatalf("read %d bytes (final %v), want the %d written", len(got), or.final, len(want))
	}
	// Two chunk buffers and a little; nine chunks allocated 18 MB before.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*snapshotChunk {
		t.Errorf("reading %d chunks allocated %d bytes, want at most %d", or.index, alloc, 3*snapshotChunk)
	}

	// A damaged chunk is still refused.
	bad := bytes.Clone(sealed.Bytes())
	bad[len(bad)/2] ^= 1
	or = &openReader{r: bytes.NewReader(bad), aead: aead, head: head}
	if _, err := io.Copy(io.Discard, or); err == nil {
		t.Fatal("a damaged chunk opened")
	}
}

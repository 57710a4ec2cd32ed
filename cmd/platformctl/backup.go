package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// manifestName is the last entry of a backup (internal/node/backup.go).
const manifestName = "backup-manifest.json"

type backupManifest struct {
	Parts []struct {
		Name   string `json:"name"`
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	} `json:"parts"`
}

// backup saves a running embedded node's data directory to a tar file
// (POST /admin/v1/backup): written next to FILE, checked against its
// manifest (every part whole, digests equal), then renamed to FILE, so
// FILE is only ever a complete backup.
func (c *cli) backup(args []string) error {
	fs := c.flags("backup")
	out := fs.String("o", "", "the tar file to write (required)")
	rest, err := parse(fs, args, true)
	if err != nil {
		return err
	}
	if len(rest) != 0 || *out == "" {
		return usagef("backup needs -o FILE and nothing else")
	}
	api, err := c.api()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(c.ctx, "POST", api.base+"/admin/v1/backup", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+api.token)
	req.Header.Set("User-Agent", "platformctl")
	// No overall timeout: a large log takes as long as it takes to copy.
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return fmt.Errorf("POST /admin/v1/backup: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-tar") {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var env envelope
		if json.Unmarshal(raw, &env) == nil && env.Message != "" {
			return &APIError{Status: resp.StatusCode, Code: codeString(env.Code, resp.StatusCode), Message: env.Message, RequestID: resp.Header.Get("X-Request-Id")}
		}
		return &APIError{Status: resp.StatusCode, Code: fmt.Sprintf("HTTP_%d", resp.StatusCode), Message: "not a backup: " + snippet(raw)}
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".platform-backup-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	size, err := io.Copy(tmp, resp.Body)
	if err != nil {
		return fmt.Errorf("reading the backup: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	m, err := verifyBackup(tmp)
	if err != nil {
		return fmt.Errorf("the backup is not whole (%d bytes received): %w", size, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "backup %s: %d bytes\n", *out, size)
	for _, p := range m.Parts {
		fmt.Fprintf(c.stdout, "  %-40s %12d  sha256 %s\n", p.Name, p.Size, p.SHA256)
	}
	fmt.Fprintf(c.stdout, "restore: extract into an empty data directory (tar -xf %s -C DIR) and start the platform on it with the same master key\n", *out)
	return nil
}

// verifyBackup reads a backup to its end and checks every part against the
// manifest that closes it.
func verifyBackup(r io.Reader) (backupManifest, error) {
	var m backupManifest
	tr := tar.NewReader(r)
	type got struct {
		size int64
		sum  string
	}
	parts := map[string]got{}
	manifest := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, err
		}
		if manifest {
			return m, fmt.Errorf("%s after the manifest", h.Name)
		}
		if h.Name == manifestName {
			if err := json.NewDecoder(tr).Decode(&m); err != nil {
				return m, fmt.Errorf("manifest: %w", err)
			}
			manifest = true
			continue
		}
		hash := sha256.New()
		n, err := io.Copy(hash, tr)
		if err != nil {
			return m, fmt.Errorf("%s: %w", h.Name, err)
		}
		parts[h.Name] = got{n, hex.EncodeToString(hash.Sum(nil))}
	}
	if !manifest {
		return m, errors.New("no manifest at its end: the copy was cut short")
	}
	if len(m.Parts) != len(parts) {
		return m, fmt.Errorf("the manifest lists %d parts, the file holds %d", len(m.Parts), len(parts))
	}
	for _, p := range m.Parts {
		g, ok := parts[p.Name]
		if !ok || g.size != p.Size || g.sum != p.SHA256 {
			return m, fmt.Errorf("%s differs from the manifest", p.Name)
		}
	}
	return m, nil
}

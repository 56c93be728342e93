// Package static holds the UI's assets, embedded so that the binary needs no files.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

//go:embed *.js *.css
var FS embed.FS

// Version is a digest of every asset: URLs carry it so browsers never use stale ones.
var Version = func() string {
	h := sha256.New()
	fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := FS.ReadFile(path)
			h.Write([]byte(path))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

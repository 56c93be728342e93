// Package static holds the UI's assets, embedded so that the binary needs no files.
//
// app.js is built from src/ by esbuild (pinned below, run through the Go toolchain, so
// neither Node nor npm is needed): `make generate` rebuilds it and CI checks that the
// committed bundle is current. The UI has no third-party front-end dependencies.
package static

// src/events.gen.js, the feed's event types and the JSDoc typedefs of their payloads, and
// src/frames.gen.js, the stream's frame types and snapshot reasons with the frames'
// typedefs, are generated first from gc/events.go and server/wire/frames.go.
//
//go:generate go run ../gc/internal/eventsjs -o src/events.gen.js
//go:generate go run ../server/wire/internal/framesjs -o src/frames.gen.js
//go:generate go run github.com/evanw/esbuild/cmd/esbuild@v0.28.2 src/main.js --bundle --format=esm --target=es2022 --charset=utf8 --legal-comments=none --log-level=warning --outfile=app.js

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

//go:embed app.js app.css favicon.svg
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

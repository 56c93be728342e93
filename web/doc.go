// Package web holds the UI's templ components, one file per screen area. The generated
// *_templ.go files are committed: `make generate` rewrites them.
package web

//go:generate go run github.com/a-h/templ/cmd/templ@v0.3.977 generate -path .

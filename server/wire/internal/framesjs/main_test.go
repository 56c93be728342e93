package main

import (
	"os"
	"slices"
	"testing"

	"github.com/gcscope/gcscope/server/wire"
)

// The committed static/src/frames.gen.js is what the generator writes now (CI also diffs
// `make generate`'s output; this says so in go test, before the page is built).
func TestCommittedFileIsCurrent(t *testing.T) {
	committed, err := os.ReadFile("../../../../static/src/frames.gen.js")
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != string(generate()) {
		t.Fatal("static/src/frames.gen.js differs from what server/wire/internal/framesjs writes: run go generate ./static/ and commit it (and app.js)")
	}
}

// TestEveryFrameTypeHasAShape walks wire.FrameTypes: each has its shape here, once.
func TestEveryFrameTypeHasAShape(t *testing.T) {
	var typed []wire.FrameType
	for _, f := range frames {
		typed = append(typed, f.typ)
	}
	if !slices.Equal(typed, wire.FrameTypes()) {
		t.Errorf("shapes for %v, wire.FrameTypes() %v", typed, wire.FrameTypes())
	}
}

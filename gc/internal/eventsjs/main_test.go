package main

import (
	"os"
	"testing"
)

// The committed static/src/events.gen.js is what the generator writes now (CI also diffs
// `make generate`'s output; this says so in go test, before the page is built).
func TestCommittedFileIsCurrent(t *testing.T) {
	committed, err := os.ReadFile("../../../static/src/events.gen.js")
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != string(generate()) {
		t.Fatal("static/src/events.gen.js differs from what gc/internal/eventsjs writes: run go generate ./static/ and commit it (and app.js)")
	}
}

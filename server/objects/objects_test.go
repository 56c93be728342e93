package objects

import (
	"testing"

	"github.com/gcscope/gcscope/gc"
)

// TestExplainTextReads: the explanation's sentence reads as English whatever comes next
// (a trial read "next, the engine will nothing: …"); its words on the wire: the server's
// TestExplainTextReads.
func TestExplainTextReads(t *testing.T) {
	for next, want := range map[string]string{
		"nothing: an object without owners is never collected": "ConfigMap a in ns: next, the engine will do nothing: an object without owners is never collected.",
		"delete it: none of its owners exists":                 "ConfigMap a in ns: next, the engine will delete it: none of its owners exists.",
	} {
		ex := gc.Explanation{Next: next}
		ex.Object.Kind, ex.Object.Name, ex.Object.Namespace = "ConfigMap", "a", "ns"
		if got := explainText(ex, nil); got != want {
			t.Errorf("explainText(%q) = %q, want %q", next, got, want)
		}
	}
}

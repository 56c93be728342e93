package history

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// TestPlacesAreEveryKindAndNamespaceRecorded: Places lists each kind and namespace the
// recording holds objects of, read back from the database when it is opened again and
// added to as objects are recorded; with namespaces, every kind recorded in each of them.
func TestPlacesAreEveryKindAndNamespaceRecorded(t *testing.T) {
	ctx := context.Background()
	s, _, all := recorded(t)
	identity := map[types.UID]gc.ObjectRef{}
	for _, r := range all {
		if r.Node != nil {
			identity[r.Node.UID] = r.Node.ObjectRef
		}
	}
	want := map[gc.ObjectRef]bool{}
	for _, r := range all {
		for _, ref := range concerns(&r, identity) {
			want[gc.ObjectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace}] = true
		}
	}
	places, err := s.Places(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range places {
		if !want[p] {
			t.Errorf("place %+v: no object recorded there", p)
		}
		delete(want, p)
	}
	for p := range want {
		t.Errorf("place %+v recorded, not among Places", p)
	}

	// Opened again, the places are read from the objects recorded.
	dir := s.opts.Dir
	s.Close()
	again := openStore(t, Options{Dir: dir})
	reread, err := again.Places(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reread, places) {
		t.Errorf("after reopening: %d places, want the %d recorded", len(reread), len(places))
	}

	// Named namespaces: every kind in each, recorded there or not.
	kinds := map[[2]string]bool{}
	for _, p := range places {
		kinds[[2]string{p.APIVersion, p.Kind}] = true
	}
	named, err := again.Places(ctx, []string{"nowhere", "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(named) != 2*len(kinds) {
		t.Errorf("two namespaces named: %d places, want %d (each of %d kinds in each)", len(named), 2*len(kinds), len(kinds))
	}
	for _, p := range named {
		if p.Namespace != "nowhere" && p.Namespace != "elsewhere" || !kinds[[2]string{p.APIVersion, p.Kind}] {
			t.Errorf("place %+v: not a recorded kind in a named namespace", p)
		}
	}
}

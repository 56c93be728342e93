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
// added to as objects are recorded; with namespaces, only those in them.
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

	// Named namespaces: the places in them; none in a namespace not recorded.
	ns := places[len(places)-1].Namespace
	named, err := again.Places(ctx, []string{ns, "made-up"})
	if err != nil {
		t.Fatal(err)
	}
	var want2 []gc.ObjectRef
	for _, p := range places {
		if p.Namespace == ns {
			want2 = append(want2, p)
		}
	}
	if len(want2) == 0 || !slices.Equal(named, want2) {
		t.Errorf("namespaces %s and made-up: %v, want %v", ns, named, want2)
	}
}

package history

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/gcscope/gcscope/gc"
)

// The places of a recording are the kinds and namespaces it holds objects of. A search for
// a reader who may see only some of them asks that reader's access of every place before
// it matches anything: the questions, and so the time they take, are the same whatever the
// search finds, and a name in namespaces the reader cannot see is not told by its delay.

type place struct{ apiVersion, kind, namespace string }

// placeSet is every place recorded, loaded from the database once and added to as objects
// are recorded (retention never removes one: a place left over only costs a question).
type placeSet struct {
	mu     sync.Mutex
	loaded bool
	set    map[place]struct{}
}

// add notes the place of an object being recorded (before its transaction commits: a
// rolled-back one leaves a place over, a load racing it cannot miss it).
func (p *placeSet) add(ref gc.ObjectRef) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.set == nil {
		p.set = map[place]struct{}{}
	}
	p.set[place{ref.APIVersion, ref.Kind, ref.Namespace}] = struct{}{}
}

// Places are the recording's places, as references with only APIVersion, Kind and
// Namespace set, sorted; with namespaces, only those in them. A namespace the recording
// does not hold has no place: a search naming made-up namespaces asks nothing.
func (s *Store) Places(ctx context.Context, namespaces []string) ([]gc.ObjectRef, error) {
	if err := s.loadPlaces(ctx); err != nil {
		return nil, err
	}
	s.places.mu.Lock()
	var out []gc.ObjectRef
	for p := range s.places.set {
		if len(namespaces) == 0 || slices.Contains(namespaces, p.namespace) {
			out = append(out, gc.ObjectRef{APIVersion: p.apiVersion, Kind: p.kind, Namespace: p.namespace})
		}
	}
	s.places.mu.Unlock()
	slices.SortFunc(out, func(a, b gc.ObjectRef) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.APIVersion, b.APIVersion), cmp.Compare(a.Kind, b.Kind))
	})
	return out, nil
}

// loadPlaces reads the places of the objects already recorded, once.
func (s *Store) loadPlaces(ctx context.Context) error {
	s.places.mu.Lock()
	loaded := s.places.loaded
	s.places.mu.Unlock()
	if loaded {
		return nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT api_version, kind, namespace FROM objects`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var read []place
	for rows.Next() {
		var p place
		if err := rows.Scan(&p.apiVersion, &p.kind, &p.namespace); err != nil {
			return err
		}
		read = append(read, p)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.places.mu.Lock()
	defer s.places.mu.Unlock()
	if s.places.set == nil {
		s.places.set = map[place]struct{}{}
	}
	for _, p := range read {
		s.places.set[p] = struct{}{}
	}
	s.places.loaded = true
	return nil
}

package server

import (
	"context"
	"fmt"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/server/registry"

	"github.com/gcscope/gcscope/server/httpapi"
)

// A search of the recording by name, namespace or kind, for a user who may see only part
// of it, asks that user's access of every place the recording holds (kind and namespace)
// before it matches: asked only for what matched, the questions' delay would tell that a
// name exists where the user may not look, and each search would spend reviews on the
// cluster in proportion to what it found.

// maxSearchReviews bounds the namespace-by-namespace access reviews one search may need
// (beyond one per kind). A user whose access has to be asked in more places names the
// namespaces to search.
const maxSearchReviews = 256

// searchesByObject reports whether q matches objects by what a reader can guess (a name,
// a namespace, a kind); uids, which cannot be guessed, are looked up as events are.
func searchesByObject(q *history.Query) bool {
	return len(q.Names) > 0 || q.NameContains != "" || len(q.Namespaces) > 0 || len(q.Kinds) > 0
}

// searchTooBroadError is a search that would ask a user's access in too many places.
type searchTooBroadError struct{}

func (e *searchTooBroadError) Error() string {
	return fmt.Sprintf("this search would check your access in more namespaces than one search may (%d resource and namespace pairs): you may see only some namespaces, so name the ones to search (namespace=)", maxSearchReviews)
}

// settleSearch asks v every question q's search could need, whatever it matches.
func settleSearch(ctx context.Context, h registry.History, v *visibility, q *history.Query) error {
	if v == nil || !searchesByObject(q) {
		return nil
	}
	places, err := h.Places(ctx, q.Namespaces)
	if err != nil {
		return err
	}
	return v.settle(places, maxSearchReviews)
}

// settle asks, in order, whether the user may list each kind of places everywhere, then,
// for the kinds they may not, in each place's namespace: all of them, or, when that would
// take more than max reviews, none (a *searchTooBroadError).
func (v *visibility) settle(places []gc.ObjectRef, max int) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var ask []nsKey
	for _, p := range places {
		switch k := v.kind(p); {
		case !k.mapped:
			v.mayListEverything()
		case k.everywhere || !k.namespaced || p.Namespace == "":
		default:
			key := nsKey{gr: k.gvr.GroupResource(), ns: p.Namespace}
			if _, ok := v.byNS[key]; !ok {
				ask = append(ask, key)
			}
		}
	}
	if len(ask) > max {
		return &searchTooBroadError{}
	}
	for _, key := range ask {
		if _, ok := v.byNS[key]; !ok {
			v.byNS[key] = v.ask(&authorizationv1.ResourceAttributes{Verb: "list", Group: key.gr.Group, Resource: key.gr.Resource, Namespace: key.ns})
		}
	}
	return nil
}

// writeSearchError answers a search settleSearch refused or could not settle.
func (s *Server) writeSearchError(w http.ResponseWriter, err error) {
	if tb, ok := err.(*searchTooBroadError); ok {
		httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(tb.Error()))
		return
	}
	s.historyError(w, err)
}

package recording

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/server/access"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/registry"
)

// A search of the recording by name, namespace or kind, for a user who may see only part
// of it, asks that user's access of every place the recording holds (kind and namespace)
// before it matches: asked only for what matched, the questions' delay would tell that a
// name exists where the user may not look, and each search would spend reviews on the
// cluster in proportion to what it found.

// MaxSearchReviews bounds the namespace-by-namespace access reviews one search may need
// (beyond one per kind). A user whose access has to be asked in more places names the
// namespaces to search.
const MaxSearchReviews = 256

// searchesByObject reports whether q matches objects by what a reader can guess (a name,
// a namespace, a kind); uids, which cannot be guessed, are looked up as events are.
func searchesByObject(q *history.Query) bool {
	return len(q.Names) > 0 || q.NameContains != "" || len(q.Namespaces) > 0 || len(q.Kinds) > 0
}

// tooBroadMessage: a search that would ask a user's access in too many places.
func tooBroadMessage() string {
	return fmt.Sprintf("this search would check your access in more namespaces than one search may (%d resource and namespace pairs): you may see only some namespaces, so name the ones to search (namespace=)", MaxSearchReviews)
}

// settleSearch asks v every question q's search could need, whatever it matches.
func settleSearch(ctx context.Context, h registry.History, v *access.Visibility, q *history.Query) error {
	if v == nil || !searchesByObject(q) {
		return nil
	}
	places, err := h.Places(ctx, q.Namespaces)
	if err != nil {
		return err
	}
	return v.Settle(places, MaxSearchReviews)
}

// writeSearchError answers a search settleSearch refused or could not settle.
func (rs *Resource) writeSearchError(w http.ResponseWriter, err error) {
	if errors.Is(err, access.ErrTooBroad) {
		httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(tooBroadMessage()))
		return
	}
	rs.historyError(w, err)
}

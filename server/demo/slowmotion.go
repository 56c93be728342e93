package demo

import (
	"fmt"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/wire"
)

// SlowMotionPath is the non-resource URL a user must be allowed to `post` to switch slow
// motion with --auth=kubernetes (it names no URL the apiserver serves: RBAC only matches it).
const SlowMotionPath = "/gcscope/slow-motion"

type slowMotionResponse struct {
	Enabled     bool   `json:"enabled"`
	ActionDelay string `json:"actionDelay"`
}

// handleSlowMotion switches the engine's action delay on or off: a demo aid, but it
// changes how the collector acts, so it is a write (CSRF, read-only, audit).
func (rs *Resource) handleSlowMotion(w http.ResponseWriter, r *http.Request) {
	entry := edge.EntryFor(r, "slowMotion")
	fail := func(status int, e *httpapi.Error) { rs.Audit.RefuseWrite(w, entry, status, e) }
	on, perr := wire.ParseSlowMotionRequest(r.Body)
	if perr != nil {
		entry.Unparsable = true
		fail(http.StatusBadRequest, httpapi.ErrBadRequest(perr.Message))
		return
	}
	entry.Enabled = &on
	if rs.ReadOnly {
		fail(http.StatusForbidden, httpapi.ErrReadOnly("gcscope runs read-only (--read-only): the engine's settings cannot be changed"))
		return
	}
	c := edge.ClusterFrom(r)
	if c.Authorizer != nil {
		// One engine serves every user: with per-user permissions, switching it is
		// granted by the cluster's RBAC, as /metrics is.
		u := edge.UserFrom(r)
		allowed, err := c.Authorizer.Allowed(r.Context(), u, nil, &authorizationv1.NonResourceAttributes{Verb: "post", Path: SlowMotionPath})
		switch {
		case err != nil:
			fail(http.StatusServiceUnavailable, httpapi.ErrUnavailable(edge.UncheckedMessage(err)))
			return
		case !allowed:
			fail(http.StatusForbidden, httpapi.ErrForbidden(fmt.Sprintf(
				"%s may not switch the engine's slow motion, which every user of this gcscope shares: grant it a ClusterRole with nonResourceURLs [%q] and verbs [post]",
				u.Name, SlowMotionPath)))
			return
		}
	}
	e, ok := c.SlowMotion()
	if !ok {
		fail(http.StatusConflict, httpapi.ErrNoActionDelay("the engine has no action delay to switch; start gcscope with --gc-action-delay (for example 2s)"))
		return
	}
	resp := slowMotionResponse{Enabled: e.SetSlowMotion(on), ActionDelay: c.Engine.ActionDelay().String()}
	entry.Result, entry.Status = "ok", http.StatusOK
	rs.Audit.Write(entry)
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

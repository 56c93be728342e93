// Package demo is the routes that drive the engine for a demonstration: the scenario
// player (/scenarios, on gcscope's embedded cluster only) and the engine's slow motion
// (/slow-motion). Both are writes: CSRF, read-only and the audit apply.
package demo

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gcscope/gcscope/scenario"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/wire"
)

// Deps are what the demo routes need of the server.
type Deps struct {
	Edge     *edge.Edge // the write guard
	Audit    *edge.Audit
	ReadOnly bool
}

// Resource serves the demo routes.
type Resource struct{ Deps }

// New is the demo routes with d.
func New(d Deps) *Resource { return &Resource{d} }

// Routes are the player (/scenarios/...) and the slow-motion switch, on a cluster's router.
func (rs *Resource) Routes(r chi.Router) {
	r.Route("/scenarios", rs.scenarioRoutes)
	r.With(httpapi.NoQuery, middleware.RequestSize(edge.MaxBodyBytes), rs.Edge.GuardWrite).
		Post("/slow-motion", rs.handleSlowMotion) // switch the engine's action delay on or off
}

// scenarioRoutes mounts the player under /api/v1/scenarios.
func (rs *Resource) scenarioRoutes(r chi.Router) {
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if edge.ClusterFrom(r).Scenarios == nil {
				edge.NoRoute(w, r) // a cluster without the player has none of its routes
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	r.Use(httpapi.NoQuery)
	write := r.With(middleware.RequestSize(edge.MaxBodyBytes), rs.Edge.GuardWrite)
	r.Get("/", rs.handleScenarios)                              // the scenarios and the runs this process remembers
	r.Get("/runs/{run}", rs.handleScenarioRun)                  // one run: its steps so far
	write.Post("/{id}/play", rs.handlePlay)                     // start a run of scenario id
	write.Post("/runs/{run}/release", rs.handleScenarioRelease) // remove the hold finalizer from the run's objects
	write.Post("/runs/{run}/cleanup", rs.handleScenarioCleanup) // stop the run, delete its namespaces
	write.Post("/cleanup", rs.handleScenarioCleanup)            // the same for every played namespace
}

type ScenariosResponse struct {
	Scenarios []scenario.Info `json:"scenarios"`
	Runs      []scenario.Run  `json:"runs"`
}

func (rs *Resource) handleScenarios(w http.ResponseWriter, r *http.Request) {
	p := edge.ClusterFrom(r).Scenarios
	httpapi.WriteJSON(w, http.StatusOK, ScenariosResponse{Scenarios: p.Scenarios(), Runs: p.Runs()})
}

func (rs *Resource) handleScenarioRun(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "run")
	run, ok := edge.ClusterFrom(r).Scenarios.Status(id)
	if !ok {
		httpapi.WriteJSON(w, http.StatusNotFound, httpapi.ErrNotFound(fmt.Sprintf("no run %s: cleaned up, or played by an earlier gcscope", httpapi.QuoteClip(id))))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, run)
}

// scenarioWrite is the frame of every player write: the body must be empty (or {}), the
// server writable, and the outcome goes to the audit log. act returns the answer.
func (rs *Resource) scenarioWrite(w http.ResponseWriter, r *http.Request, action string, act func(*edge.Entry) (int, any, error)) {
	entry := edge.EntryFor(r, action)
	entry.Scenario, entry.Run = chi.URLParam(r, "id"), chi.URLParam(r, "run")
	fail := func(status int, e *httpapi.Error) { rs.Audit.RefuseWrite(w, entry, status, e) }
	if perr := wire.ParseEmptyRequest(r.Body); perr != nil {
		entry.Unparsable = true
		fail(http.StatusBadRequest, httpapi.ErrBadRequest(perr.Message))
		return
	}
	if rs.ReadOnly {
		fail(http.StatusForbidden, httpapi.ErrReadOnly("gcscope runs read-only (--read-only): scenarios cannot be played"))
		return
	}
	status, body, err := act(&entry)
	if err != nil {
		var st apierrors.APIStatus
		switch {
		case errors.Is(err, scenario.ErrUnknownScenario), errors.Is(err, scenario.ErrUnknownRun):
			fail(http.StatusNotFound, httpapi.ErrNotFound(err.Error()))
		case errors.Is(err, scenario.ErrBusy), errors.Is(err, scenario.ErrNothingHeld):
			fail(http.StatusConflict, httpapi.ErrConflict(err.Error()))
		case errors.As(err, &st):
			code := int(st.Status().Code)
			if code < 400 || code > 599 {
				code = http.StatusBadGateway
			}
			fail(code, httpapi.ErrAPIServer(string(st.Status().Reason), err.Error()))
		default:
			fail(http.StatusBadGateway, httpapi.ErrAPIServer("", err.Error()))
		}
		return
	}
	entry.Result, entry.Status = "ok", status
	rs.Audit.Write(entry)
	httpapi.WriteJSON(w, status, body)
}

func (rs *Resource) handlePlay(w http.ResponseWriter, r *http.Request) {
	rs.scenarioWrite(w, r, "scenarioPlay", func(e *edge.Entry) (int, any, error) {
		run, err := edge.ClusterFrom(r).Scenarios.Play(r.Context(), e.Scenario)
		e.Run = run.ID
		return http.StatusAccepted, run, err
	})
}

func (rs *Resource) handleScenarioRelease(w http.ResponseWriter, r *http.Request) {
	rs.scenarioWrite(w, r, "scenarioRelease", func(e *edge.Entry) (int, any, error) {
		run, err := edge.ClusterFrom(r).Scenarios.Release(r.Context(), e.Run)
		return http.StatusOK, run, err
	})
}

func (rs *Resource) handleScenarioCleanup(w http.ResponseWriter, r *http.Request) {
	rs.scenarioWrite(w, r, "scenarioCleanup", func(e *edge.Entry) (int, any, error) {
		out, err := edge.ClusterFrom(r).Scenarios.Cleanup(r.Context(), e.Run)
		return http.StatusOK, out, err
	})
}

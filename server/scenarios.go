package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gcscope/gcscope/scenario"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/wire"
)

// scenarioRoutes mounts the player under /api/v1/scenarios.
func (s *Server) scenarioRoutes(r chi.Router) {
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if clusterFrom(r).Scenarios == nil {
				noRoute(w, r) // a cluster without the player has none of its routes
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	r.Use(httpapi.NoQuery)
	write := r.With(middleware.RequestSize(maxBodyBytes), s.guardWrite)
	r.Get("/", s.handleScenarios)                              // the scenarios and the runs this process remembers
	r.Get("/runs/{run}", s.handleScenarioRun)                  // one run: its steps so far
	write.Post("/{id}/play", s.handlePlay)                     // start a run of scenario id
	write.Post("/runs/{run}/release", s.handleScenarioRelease) // remove the hold finalizer from the run's objects
	write.Post("/runs/{run}/cleanup", s.handleScenarioCleanup) // stop the run, delete its namespaces
	write.Post("/cleanup", s.handleScenarioCleanup)            // the same for every played namespace
}

type scenariosResponse struct {
	Scenarios []scenario.Info `json:"scenarios"`
	Runs      []scenario.Run  `json:"runs"`
}

func (s *Server) handleScenarios(w http.ResponseWriter, r *http.Request) {
	p := clusterFrom(r).Scenarios
	httpapi.WriteJSON(w, http.StatusOK, scenariosResponse{Scenarios: p.Scenarios(), Runs: p.Runs()})
}

func (s *Server) handleScenarioRun(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "run")
	run, ok := clusterFrom(r).Scenarios.Status(id)
	if !ok {
		httpapi.WriteJSON(w, http.StatusNotFound, httpapi.ErrNotFound(fmt.Sprintf("no run %s: cleaned up, or played by an earlier gcscope", httpapi.QuoteClip(id))))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, run)
}

// scenarioWrite is the frame of every player write: the body must be empty (or {}), the
// server writable, and the outcome goes to the audit log. act returns the answer.
func (s *Server) scenarioWrite(w http.ResponseWriter, r *http.Request, action string, act func(*auditEntry) (int, any, error)) {
	entry := entryFor(r, action)
	entry.Scenario, entry.Run = chi.URLParam(r, "id"), chi.URLParam(r, "run")
	fail := func(status int, e *httpapi.Error) { s.refuseWrite(w, entry, status, e) }
	if perr := wire.ParseEmptyRequest(r.Body); perr != nil {
		entry.Unparsable = true
		fail(http.StatusBadRequest, httpapi.ErrBadRequest(perr.Message))
		return
	}
	if s.opts.ReadOnly {
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
	s.audit.write(entry)
	httpapi.WriteJSON(w, status, body)
}

func (s *Server) handlePlay(w http.ResponseWriter, r *http.Request) {
	s.scenarioWrite(w, r, "scenarioPlay", func(e *auditEntry) (int, any, error) {
		run, err := clusterFrom(r).Scenarios.Play(r.Context(), e.Scenario)
		e.Run = run.ID
		return http.StatusAccepted, run, err
	})
}

func (s *Server) handleScenarioRelease(w http.ResponseWriter, r *http.Request) {
	s.scenarioWrite(w, r, "scenarioRelease", func(e *auditEntry) (int, any, error) {
		run, err := clusterFrom(r).Scenarios.Release(r.Context(), e.Run)
		return http.StatusOK, run, err
	})
}

func (s *Server) handleScenarioCleanup(w http.ResponseWriter, r *http.Request) {
	s.scenarioWrite(w, r, "scenarioCleanup", func(e *auditEntry) (int, any, error) {
		out, err := clusterFrom(r).Scenarios.Cleanup(r.Context(), e.Run)
		return http.StatusOK, out, err
	})
}

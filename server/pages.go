package server

import (
	"net/http"
	"strings"

	"github.com/gcscope/gcscope/static"
	"github.com/gcscope/gcscope/web"
)

// assetURL names an embedded asset with the assets' digest, so a browser never keeps a
// stale one.
func assetURL(name string) string { return "/static/" + name + "?v=" + static.Version }

// handleIndex renders the UI's page.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	p := web.Page{Title: "ownership graph", Version: s.opts.Version, ReadOnly: s.opts.ReadOnly,
		CSRFToken: s.csrfToken(w, r), Asset: assetURL}
	if s.opts.Engine != nil {
		p.Mode = string(s.opts.Engine.Mode())
	}
	if e, ok := s.slowMotion(); ok {
		p.ActionDelay, p.SlowMotion = s.opts.Engine.ActionDelay().String(), e.SlowMotion()
	}
	p.Scenarios = s.opts.Scenarios != nil
	if s.opts.Auth != nil {
		p.User = userFrom(r).Name
	}
	p.History = s.opts.History != nil
	p.Replay = s.opts.Replay
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'")
	if err := web.App(p).Render(r.Context(), w); err != nil {
		s.log.Warn("rendering the page", "err", err)
	}
}

// handleStatic serves the embedded assets; versioned URLs are cached for a long time.
func (s *Server) handleStatic() http.Handler {
	files := http.StripPrefix("/static/", http.FileServer(http.FS(static.FS)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("v") == static.Version {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		files.ServeHTTP(w, r)
	})
}

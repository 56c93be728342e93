package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/served"
	"github.com/gcscope/gcscope/static"
	"github.com/gcscope/gcscope/web"
)

// assetURL names an embedded asset with the assets' digest, so a browser never keeps a
// stale one.
func assetURL(name string) string { return "/static/" + name + "?v=" + static.Version }

// pickerWait bounds how long the page waits for the clusters to say whether they accept
// its user, for its picker.
const pickerWait = 500 * time.Millisecond

// handleIndex renders the UI's page, of the cluster it shows (pageCluster).
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	c, ok := s.pageCluster(w, r)
	if !ok {
		return
	}
	p := web.Page{Title: "ownership graph", Version: s.opts.Version, ReadOnly: s.opts.ReadOnly,
		CSRFToken: s.edge.CSRFToken(w, r), Asset: assetURL, FullGraph: s.opts.PageFullGraph}
	if c.Engine != nil {
		p.Mode = string(c.Engine.Mode())
	}
	if e, ok := c.SlowMotion(); ok {
		p.ActionDelay, p.SlowMotion = c.Engine.ActionDelay().String(), e.SlowMotion()
	}
	p.Scenarios = c.Scenarios != nil
	if s.opts.Auth != nil {
		p.User = edge.UserFrom(r).Name
	}
	p.History = c.History != nil
	p.Replay = s.opts.Replay
	if s.several {
		p.Title = c.Name + " · ownership graph"
		p.Cluster, p.ClusterState, p.ClusterReason = c.Name, string(registry.Ready), ""
		if c.Engine == nil {
			p.ClusterState, p.ClusterReason = string(c.Status.State), c.Status.Reason
		}
		// The picker as this user sees it; a cluster slow to say is listed as it is for
		// everyone until the page's first poll.
		ctx, cancel := context.WithTimeout(r.Context(), pickerWait)
		defer cancel()
		for _, st := range s.clustersFor(ctx, r) {
			p.Clusters = append(p.Clusters, web.ClusterOption{Name: st.Name, Server: st.Server, State: string(st.State), Reason: st.Reason})
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'")
	if err := web.App(p).Render(r.Context(), w); err != nil {
		s.log.Warn("rendering the page", "err", err)
	}
}

// clusterCookie remembers the cluster this browser looked at last, signed under the
// process key: opening the page sends the browser to that cluster, which starts its engine,
// and a cookie another application on this host planted must not choose it.
const clusterCookie = "gcscope_cluster"

// clusterCookieValue is the cookie naming cluster name: the name, a dot, its MAC.
func (s *Server) clusterCookieValue(name string) string {
	return url.QueryEscape(name) + "." + s.clusterMAC(name)
}

// clusterOfCookie is the cluster a cookie value names, if gcscope signed it.
func (s *Server) clusterOfCookie(v string) (string, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return "", false
	}
	name, err := url.QueryUnescape(v[:i])
	if err != nil || !hmac.Equal([]byte(v[i+1:]), []byte(s.clusterMAC(name))) {
		return "", false
	}
	return name, true
}

func (s *Server) clusterMAC(name string) string {
	m := hmac.New(sha256.New, s.processKey)
	m.Write([]byte("gcscope-cluster\x00"))
	m.Write([]byte(name))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// pageCluster is the cluster the page shows: the one ?cluster= names; without it, the
// one this browser looked at last, else the default, and the page is sent to its URL
// (with several clusters the URL always names one). Opening it starts its engine.
func (s *Server) pageCluster(w http.ResponseWriter, r *http.Request) (*served.Cluster, bool) {
	if !s.several { // one cluster: the URL need not name it
		return s.cluster(s.defaultCluster(), true)
	}
	q := r.URL.Query()
	if len(q["cluster"]) > 1 {
		plain(w, http.StatusBadRequest, "?cluster= names one cluster: give it once")
		return nil, false
	}
	name := q.Get("cluster")
	if name == "" {
		name = s.defaultCluster()
		if v, err := edge.RequestCookie(r, clusterCookie); err == nil {
			if last, ok := s.clusterOfCookie(v); ok && s.known(last) {
				name = last
			}
		}
		q.Set("cluster", name)
		http.Redirect(w, r, "/?"+q.Encode(), http.StatusSeeOther)
		return nil, false
	}
	c, ok := s.cluster(name, s.mayStart(r))
	if !ok {
		var names []string
		for _, st := range s.clusters.List() {
			names = append(names, strconv.Quote(st.Name))
		}
		plain(w, http.StatusNotFound, fmt.Sprintf("gcscope serves no cluster named %s; it serves %s", httpapi.QuoteClip(name), strings.Join(names, ", ")))
		return nil, false
	}
	if !s.mayStart(r) {
		return c, true // another site's link does not choose where the user lands next
	}
	http.SetCookie(w, &http.Cookie{Name: clusterCookie, Value: s.clusterCookieValue(name), Path: "/", MaxAge: 365 * 24 * 60 * 60,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	return c, true
}

// known reports whether name is a cluster the server serves.
func (s *Server) known(name string) bool {
	for _, st := range s.clusters.List() {
		if st.Name == name {
			return true
		}
	}
	return false
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

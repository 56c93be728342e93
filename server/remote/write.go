package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/gcscope/gcscope/server/httpapi"
)

// The remote's CSRF rules are gcscope's own: a write carries the token of the session its
// csrf cookie names, bound to the user's bearer token (server/csrf.go). The hub has checked
// the browser's token for the hub; for the remote it asks the remote's /session as the
// user, just before the write, and sends that pair (never the browser's cookie).
const (
	csrfCookie = "gcscope_csrf"
	csrfHeader = "X-CSRF-Token"
)

type remoteCSRF struct{ cookie, token string }

// Write is a proxied write, for the hub's audit line (the remote writes its own).
type Write struct {
	Cluster string
	Path    string // below the cluster's /api/v1
	Status  int
	Error   string // the remote's (or the hub's) message when Status >= 400
	// Policy and DryRun are as the body asked, when it could be read.
	Policy string
	DryRun *bool
}

// write forwards a write: its body read whole (bounded), the remote's CSRF pair fetched
// as the user, then the request proxied; the hub's audit line says how it went.
func (rm *Remote) write(w http.ResponseWriter, r *http.Request, call Call, out *outgoing) {
	rec := Write{Cluster: rm.cfg.Name, Path: call.Path}
	audited := false
	audit := func(status int, msg string) { // once: the first word on the write is its line
		if call.Audit != nil && !audited {
			audited = true
			rec.Status, rec.Error = status, msg
			call.Audit(rec)
		}
	}
	fail := func(status int, e *httpapi.Error) {
		audit(status, e.Message)
		httpapi.WriteJSON(w, status, e)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rm.limits.MaxWriteBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			fail(http.StatusRequestEntityTooLarge, httpapi.ErrBadRequest(fmt.Sprintf("the request body is over %d bytes", rm.limits.MaxWriteBytes)))
			return
		}
		fail(http.StatusBadRequest, httpapi.ErrBadRequest("reading the request body: "+err.Error()))
		return
	}
	var asked struct {
		PropagationPolicy string `json:"propagationPolicy"`
		DryRun            *bool  `json:"dryRun"`
	}
	if json.Unmarshal(body, &asked) == nil {
		rec.Policy, rec.DryRun = asked.PropagationPolicy, asked.DryRun
	}
	if call.ReadOnly && (asked.DryRun == nil || !*asked.DryRun) && !strings.HasSuffix(call.Path, "/orphan-marks/dismiss") {
		fail(http.StatusForbidden, httpapi.ErrReadOnly("this hub is read-only (--read-only): it predicts deletes on its clusters but makes none"))
		return
	}

	csrf, err := rm.csrfFor(r.Context(), out.token)
	if err != nil {
		var refused *errRefused
		switch {
		case errors.As(err, &refused):
			fail(http.StatusForbidden, httpapi.ErrForbidden(refused.Error()))
		default:
			rm.probeNow()
			fail(http.StatusBadGateway, httpapi.ErrUnavailable(fmt.Sprintf("cluster %q (%s) did not answer: %v", rm.cfg.Name, rm.base, err)))
		}
		return
	}
	out.csrf = csrf
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	// The remote's answer is audited before the browser gets a byte of it: whoever reads
	// the answer can find its line.
	out.answered = func(resp *http.Response) {
		var msg string
		if resp.ContentLength > rm.limits.MaxResponseBytes {
			msg = fmt.Sprintf("the remote's answer (%d bytes) is larger than the hub passes on: the browser gets it cut off", resp.ContentLength)
		} else if resp.StatusCode >= http.StatusBadRequest {
			head, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
			msg = errorMessage(bytes.NewReader(head))
		}
		audit(resp.StatusCode, msg)
	}

	// An answer the hub makes itself (the remote unreachable, its 401, a redirect): its
	// status and the start of its body, for the audit line.
	ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
	head := &httpapi.HeadOf{Max: 4 << 10}
	ww.Tee(head)
	// An answer cut off before its headers (over its bound, the remote gone) aborts the
	// handler with a panic: the write may have been made all the same, so its audit line
	// is written first.
	cut := true
	defer func() {
		if cut {
			audit(ww.Status(), "the remote's answer was cut off before its end")
		}
	}()
	rm.proxy(ww, r, call, out)
	cut = false
	status := ww.Status()
	var msg string
	if status >= http.StatusBadRequest {
		msg = errorMessage(bytes.NewReader(head.B))
	}
	audit(status, msg)
}

// csrfFor asks the remote's /session, as the user whose token it is, for its CSRF cookie
// and token.
func (rm *Remote) csrfFor(ctx context.Context, token string) (*remoteCSRF, error) {
	s, err := rm.session(ctx, token, rm.limits.ResponseTimeout)
	if err != nil {
		return nil, err
	}
	if s.csrfCookie == "" || s.CSRFToken == "" {
		return nil, errors.New("its /session set no CSRF cookie")
	}
	return &remoteCSRF{cookie: s.csrfCookie, token: s.CSRFToken}, nil
}

// isUpgrade reports whether r asks for a websocket.
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

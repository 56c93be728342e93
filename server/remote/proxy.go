package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"

	"github.com/gcscope/gcscope/server/httpapi"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/stream"
)

// Call is one request to a remote, as the hub's server hands it over once its own checks
// (Host, Origin, CSRF for writes, authentication) have passed.
type Call struct {
	// Path is the request's path below /api/v1 of the cluster, escaped as sent ("/graph",
	// "/objects/UID/delete", "/stream").
	Path string
	// User names the hub's user (its audit line, its stream seats).
	User       string
	Credential Credential
	// CSRFToken is the hub's own CSRF token for this browser: the remote's /session
	// answers with the remote's, which the page must never see (it writes to the hub).
	CSRFToken func() string
	// Audit writes the hub's audit line of a write (nil: none).
	Audit func(Write)
	// Recheck asks the hub whether the user's credentials are still good, for a relayed
	// stream (nil: never asked).
	Recheck func(context.Context) error
	// ReadOnly is the hub's --read-only: every write is refused at the hub but a dry run
	// (a prediction) and the dismissal of orphan marks (the remote gcscope's own memory),
	// whatever the remote allows.
	ReadOnly bool
	// Seats are the hub's own bounds of streams (--max-streams, --max-streams-per-user),
	// which a relayed stream counts against as a local one does (nil: none).
	Seats *stream.Seats
}

// outgoing is what Rewrite adds to a proxied request.
type outgoing struct {
	url   string
	token string
	csrf  *remoteCSRF // writes: the remote's own CSRF cookie and token
	// answered is told of the remote's answer, checked, before it is passed on (nil: not).
	answered func(*http.Response)
}

// Serve answers r with the remote's answer to the same request.
func (rm *Remote) Serve(w http.ResponseWriter, r *http.Request, call Call) {
	if call.Path == "/stream" {
		rm.relay(w, r, call)
		return
	}
	if !strings.HasPrefix(call.Path, "/") {
		call.Path = "/" + call.Path
	}
	token, err := rm.forward.pick(rm.cfg.Name, call.Credential)
	if err != nil {
		httpapi.WriteJSON(w, http.StatusForbidden, httpapi.ErrForbidden(err.Error()))
		return
	}
	if st := rm.Status(); st.State == registry.Failed {
		rm.probeNow()
		w.Header().Set("Retry-After", "2")
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.ErrClusterNotReady(fmt.Sprintf("cluster %q is failed: %s", rm.cfg.Name, st.Reason)))
		return
	}
	u, err := rm.endpoint("/api/v1" + call.Path)
	if err != nil {
		httpapi.WriteJSON(w, http.StatusBadRequest, httpapi.ErrBadRequest(err.Error()))
		return
	}
	u.RawQuery = r.URL.RawQuery
	out := &outgoing{url: u.String(), token: token}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rm.write(w, r, call, out)
		return
	}
	rm.proxy(w, r, call, out)
}

// proxy forwards r as out says, and relays the answer (bounded in size and time).
func (rm *Remote) proxy(w http.ResponseWriter, r *http.Request, call Call, out *outgoing) {
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL, _ = pr.Out.URL.Parse(out.url)
			pr.Out.Host = ""
			pr.Out.Header = requestHeaders(pr.In.Header, out)
			// The browser's framing and trailers are its connection's (a write's body was
			// read whole: its length is known); a read has no body for the remote.
			pr.Out.TransferEncoding, pr.Out.Trailer = nil, nil
			if pr.In.Method == http.MethodGet || pr.In.Method == http.MethodHead {
				pr.Out.Body, pr.Out.ContentLength = http.NoBody, 0
			}
		},
		Transport:     rm.client.Transport,
		FlushInterval: -1, // a history export streams: pass its bytes on as they come
		ModifyResponse: func(resp *http.Response) error {
			if err := rm.answer(resp, call); err != nil {
				return err
			}
			if out.answered != nil {
				out.answered(resp)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { rm.failed(w, err) },
		ErrorLog:     slog.NewLogLogger(rm.log.Handler(), slog.LevelDebug),
	}
	p.ServeHTTP(w, r)
}

// forwardedRequest are the request headers a remote is given; everything else (the hub's
// cookies, its Authorization, its CSRF token, Origin and Referer, proxy headers) stays at
// the hub.
var forwardedRequest = []string{"Accept", "Accept-Encoding", "Accept-Language", "Content-Type",
	"If-None-Match", "If-Modified-Since", "X-Request-Id"}

// forwardedResponse are the response headers the browser is given; the remote's cookies
// and its security headers (the hub sets its own) stay out.
var forwardedResponse = []string{"Content-Type", "Content-Encoding", "Content-Length", "Content-Disposition",
	"Cache-Control", "ETag", "Last-Modified", "Retry-After", "Vary", "X-Request-Id"}

func requestHeaders(in http.Header, out *outgoing) http.Header {
	h := http.Header{}
	for _, k := range forwardedRequest {
		if v := in.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	h.Set("User-Agent", "gcscope-hub")
	if out.token != "" {
		h.Set("Authorization", "Bearer "+out.token)
	}
	if out.csrf != nil {
		h.Set("Cookie", (&http.Cookie{Name: csrfCookie, Value: out.csrf.cookie}).String())
		h.Set(csrfHeader, out.csrf.token)
	}
	return h
}

// answer checks and trims the remote's answer before the browser gets it.
func (rm *Remote) answer(resp *http.Response, call Call) error {
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified:
		resp.Body.Close()
		return fmt.Errorf("%w (to %q)", errRedirect, resp.Header.Get("Location"))
	case resp.StatusCode == http.StatusUnauthorized:
		// Not a 401 at the hub: the page would sign the user out of the hub, where they
		// are signed in; the remote refuses them, which the page shows as such.
		refused := refusedBecause(rm.cfg.Name, resp.Body)
		resp.Body.Close()
		return refused
	}
	h := http.Header{}
	for _, k := range forwardedResponse {
		if v := resp.Header.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	resp.Header = h
	resp.Trailer = nil // nor its trailers (boundedBody drops those that come after the body)
	resp.Body = &boundedBody{rc: resp.Body, resp: resp, left: rm.limits.MaxResponseBytes, name: rm.cfg.Name}
	if call.Path == "/session" && resp.StatusCode == http.StatusOK && call.CSRFToken != nil {
		return rewriteSession(resp, call.CSRFToken())
	}
	return nil
}

// rewriteSession puts the hub's CSRF token in the remote's /session answer: the page
// writes to the hub, which checks its own token, then gets the remote's for the write.
func rewriteSession(resp *http.Response, hubToken string) error {
	if resp.Header.Get("Content-Encoding") != "" {
		return errors.New("the remote compressed /session, which it never does")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return fmt.Errorf("the remote's /session: %w", err)
	}
	fields["csrfToken"], _ = json.Marshal(hubToken)
	fields["remote"] = json.RawMessage("true")
	body, _ = json.Marshal(fields)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// failed answers a request the remote did not answer (or answered with what the hub does
// not pass on), and has the prober look at once when it could not be reached.
func (rm *Remote) failed(w http.ResponseWriter, err error) {
	var refused *errRefused
	switch {
	case errors.As(err, &refused):
		httpapi.WriteJSON(w, http.StatusForbidden, httpapi.ErrForbidden(refused.Error()))
	case errors.Is(err, errRedirect):
		httpapi.WriteJSON(w, http.StatusBadGateway, httpapi.ErrUnavailable(fmt.Sprintf("cluster %q: %v", rm.cfg.Name, err)))
	case errors.Is(err, context.Canceled):
		// The browser went away: nobody reads an answer.
	default:
		rm.probeNow()
		status := http.StatusBadGateway
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			status = http.StatusGatewayTimeout
		}
		httpapi.WriteJSON(w, status, httpapi.ErrUnavailable(fmt.Sprintf("cluster %q (%s) did not answer: %v", rm.cfg.Name, rm.base, err)))
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// errorMessage is the message of an API error body (its JSON "message"), or its text.
func errorMessage(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 4<<10))
	var e httpapi.Error
	if json.Unmarshal(b, &e) == nil && e.Message != "" {
		return e.Message
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		return s
	}
	return "no reason given"
}

// boundedBody cuts a response past its bound: the copy to the browser fails, and the
// proxy aborts the response rather than pass on a truncated one as whole. It also drops
// the trailers the remote sends after the body (net/http stores them in resp.Trailer as
// the body ends, where the proxy would copy them to the browser).
type boundedBody struct {
	rc   io.ReadCloser
	resp *http.Response
	left int64
	name string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("cluster %q: the answer is larger than the hub passes on", b.name)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more tells a body of exactly the bound from a longer one
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err != nil {
		b.resp.Trailer = nil
	}
	if b.left < 0 {
		return max(n-1, 0), fmt.Errorf("cluster %q: the answer is larger than the hub passes on", b.name)
	}
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.rc.Close()
	b.resp.Trailer = nil
	return err
}

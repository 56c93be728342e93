package remote_test

// What the hub passes between a browser and a remote, and what it keeps back, checked on
// Remote.Serve alone: a stand-in remote (httptest) records every request it gets, and a
// bare handler plays the hub's server (its own checks are server/'s tests). No control
// plane is started.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/remote"
)

// standIn is a remote gcscope played by a handler; it records the requests it gets.
type standIn struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request // each with its header and path as received
}

func newStandIn(t *testing.T, h http.HandlerFunc) *standIn {
	t.Helper()
	s := &standIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Clone(context.Background()))
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *standIn) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// last is the last request to path (escaped), or nil.
func (s *standIn) last(path string) *http.Request {
	reqs := s.requests()
	for _, r := range slices.Backward(reqs) {
		if r.URL.EscapedPath() == path {
			return r
		}
	}
	return nil
}

// sessionHandler answers /api/v1/session as a gcscope does: its CSRF cookie and token.
func sessionHandler(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/api/v1/session" {
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: "gcscope_csrf", Value: "remote-csrf-cookie", HttpOnly: true})
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"user":{"name":"alice"},"csrfToken":"remote-csrf-token"}`)
	return true
}

// testHub serves one remote as the hub's server would once its own checks have passed: the
// path below /api/v1 and the credential given by cred.
// Writes' audit records go to audits[0] when given.
func testHub(t *testing.T, cfg remote.Config, l remote.Limits, cred remote.Credential, audits ...*auditRecords) (*httptest.Server, *remote.Set) {
	t.Helper()
	set, err := remote.NewSet([]remote.Config{cfg}, remote.Options{Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := set.Lookup(cfg.Name)
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rm.Serve(w, r, remote.Call{
			Path: strings.TrimPrefix(r.URL.EscapedPath(), "/api/v1"), User: "alice", Credential: cred,
			CSRFToken: func() string { return "hub-csrf-token" },
			Audit: func(wr remote.Write) {
				if len(audits) > 0 {
					audits[0].add(wr)
				}
			},
		})
	}))
	t.Cleanup(hub.Close)
	return hub, set
}

// auditRecords are the hub's audit records of writes, as Call.Audit hands them over.
type auditRecords struct {
	mu   sync.Mutex
	list []remote.Write
}

func (a *auditRecords) add(w remote.Write) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, w)
}

func (a *auditRecords) get() []remote.Write {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.list)
}

// browserHeaders are what a browser signed in to the hub sends with each request, and
// what none of which is the remote's business.
func browserHeaders(hubURL string) http.Header {
	return http.Header{
		"Authorization":       {"Bearer browser-to-hub"},
		"Cookie":              {"gcscope_session=hub-session; gcscope_csrf=hub-csrf-cookie"},
		"X-Csrf-Token":        {"hub-csrf-token"},
		"Origin":              {hubURL},
		"Referer":             {hubURL + "/?cluster=r"},
		"Accept":              {"application/json"},
		"X-Request-Id":        {"req-1"},
		"Connection":          {"keep-alive, X-Hop"},
		"X-Hop":               {"named by Connection"},
		"Keep-Alive":          {"timeout=5"},
		"Proxy-Authorization": {"Basic cHJveHk6c2VjcmV0"},
		"Proxy-Connection":    {"keep-alive"},
		"Te":                  {"trailers"},
		"Upgrade":             {"h2c"},
		"Forwarded":           {"for=192.0.2.1"},
		"X-Forwarded-For":     {"192.0.2.1"},
	}
}

// kept are request headers that must not reach a remote, whatever the path.
var kept = []string{"Cookie", "X-Csrf-Token", "Origin", "Referer", "Connection", "X-Hop", "Keep-Alive",
	"Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
	"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"}

func do(t *testing.T, method, url string, h http.Header, body string) (*http.Response, string, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultTransport.RoundTrip(req) // no redirect followed, no cookie kept
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// TestProxyForwardsTheUsersTokenOnly: a read, a write (and the /session it asks first) and
// the stream reach the remote with the user's token as the hub's server hands it over, and
// nothing of what the browser sent the hub: not its Authorization, not its cookies (a
// write carries the remote's own CSRF cookie, and that alone), not its CSRF token, not
// Origin or Referer. A hub without authentication forwards no credential at all.
func TestProxyForwardsTheUsersTokenOnly(t *testing.T) {
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		if sessionHandler(w, r) {
			return
		}
		if r.URL.Path == "/api/v1/stream" {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			c.Write(r.Context(), websocket.MessageText, []byte(`{"type":"snapshot"}`))
			c.Close(websocket.StatusNormalClosure, "")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	})
	for _, tc := range []struct {
		name string
		cred remote.Credential
		want string // the remote's Authorization
	}{
		{"signed in", remote.Credential{Token: "alice-token"}, "Bearer alice-token"},
		{"no authentication at the hub", remote.Credential{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub, _ := testHub(t, remote.Config{Name: "r", URL: rem.URL}, remote.Limits{}, tc.cred)
			h := browserHeaders(hub.URL)
			if resp, body, err := do(t, http.MethodGet, hub.URL+"/api/v1/graph?namespace=x", h, ""); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("read: %v %v %s", resp, err, body)
			}
			wh := h.Clone()
			wh.Set("Content-Type", "application/json")
			if resp, body, err := do(t, http.MethodPost, hub.URL+"/api/v1/objects/u1/delete", wh, `{"dryRun":true}`); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("write: %v %v %s", resp, err, body)
			}
			sh := http.Header{}
			for _, k := range []string{"Authorization", "Cookie", "Origin", "Referer", "X-Csrf-Token", "Proxy-Authorization", "X-Forwarded-For"} {
				sh[k] = h[k]
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hub.URL, "http")+"/api/v1/stream?namespace=x", &websocket.DialOptions{HTTPHeader: sh})
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if _, _, err := c.Read(ctx); err != nil {
				t.Fatalf("stream's first frame: %v", err)
			}
			c.CloseNow()

			for _, path := range []string{"/api/v1/graph", "/api/v1/session", "/api/v1/objects/u1/delete", "/api/v1/stream"} {
				r := rem.last(path)
				if r == nil {
					t.Errorf("%s never reached the remote", path)
					continue
				}
				if got := r.Header.Values("Authorization"); tc.want == "" && len(got) > 0 || tc.want != "" && !slices.Equal(got, []string{tc.want}) {
					t.Errorf("%s reached the remote with Authorization %q; want %q", path, got, tc.want)
				}
				for _, k := range []string{"Cookie", "X-Csrf-Token", "Origin", "Referer", "Proxy-Authorization", "X-Forwarded-For"} {
					if path == "/api/v1/objects/u1/delete" && (k == "Cookie" || k == "X-Csrf-Token") {
						continue // the remote's own pair: below
					}
					if v := r.Header.Values(k); len(v) > 0 {
						t.Errorf("%s reached the remote with %s: %q", path, k, v)
					}
				}
			}
			wr := rem.last("/api/v1/objects/u1/delete")
			if got := wr.Header.Values("Cookie"); !slices.Equal(got, []string{"gcscope_csrf=remote-csrf-cookie"}) {
				t.Errorf("the write's cookies at the remote: %q; want the remote's CSRF cookie alone", got)
			}
			if got := wr.Header.Values("X-Csrf-Token"); !slices.Equal(got, []string{"remote-csrf-token"}) {
				t.Errorf("the write's CSRF token at the remote: %q; want the remote's", got)
			}
		})
	}
}

// TestProxyStripsHopByHopHeaders: the headers of one connection (Connection and those it
// names, Keep-Alive, Proxy-*, TE, Trailer, Upgrade on a request that is not a websocket's)
// and the client's forwarding headers stop at the hub; the remote's hop-by-hop headers,
// its trailers, its cookies and its security headers stop there on the way back, while
// the headers an answer needs (type, cache validators, request id) pass.
func TestProxyStripsHopByHopHeaders(t *testing.T) {
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("ETag", `"v1"`)
		h.Set("X-Request-Id", "req-1")
		h.Set("Connection", "X-Resp-Hop")
		h.Set("X-Resp-Hop", "named by Connection")
		h.Set("Keep-Alive", "timeout=99")
		h.Set("Proxy-Authenticate", "Basic realm=remote")
		h.Set("Upgrade", "h2c")
		h.Set("Trailer", "X-Remote-Trailer")
		h.Add("Set-Cookie", "gcscope_session=remote-session; HttpOnly")
		h.Add("Set-Cookie", "gcscope_csrf=remote-csrf; HttpOnly")
		h.Set("Content-Security-Policy", "default-src *")
		h.Set("Strict-Transport-Security", "max-age=0")
		h.Set("X-Frame-Options", "ALLOWALL")
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Clear-Site-Data", `"*"`)
		h.Set("Refresh", "0; url=https://elsewhere.example/")
		h.Set("WWW-Authenticate", "Bearer")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"ok":true}`)
		h.Set("X-Remote-Trailer", "end")
	})
	hub, _ := testHub(t, remote.Config{Name: "r", URL: rem.URL}, remote.Limits{}, remote.Credential{Token: "alice-token"})

	// A request with a chunked body and a trailer of its own, and every hop-by-hop header.
	req, _ := http.NewRequest(http.MethodGet, hub.URL+"/api/v1/graph", io.MultiReader(strings.NewReader("x")))
	req.ContentLength = -1
	req.Header = browserHeaders(hub.URL)
	req.Trailer = http.Header{"X-Browser-Trailer": {"t"}}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != `{"ok":true}` {
		t.Fatalf("read through the hub: %d %q %v", resp.StatusCode, body, err)
	}

	got := rem.last("/api/v1/graph")
	if got == nil {
		t.Fatal("the read never reached the remote")
	}
	for _, k := range kept {
		if v := got.Header.Values(k); len(v) > 0 {
			t.Errorf("the remote got %s: %q", k, v)
		}
	}
	if len(got.Trailer) > 0 || len(got.TransferEncoding) > 0 {
		t.Errorf("the remote got the browser's trailer %v or transfer encoding %v", got.Trailer, got.TransferEncoding)
	}
	for k, want := range map[string]string{"Accept": "application/json", "X-Request-Id": "req-1"} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("the remote got %s %q; want %q passed on", k, v, want)
		}
	}

	for _, k := range []string{"Connection", "X-Resp-Hop", "Keep-Alive", "Proxy-Authenticate", "Upgrade", "Trailer",
		"Set-Cookie", "Content-Security-Policy", "Strict-Transport-Security", "X-Frame-Options",
		"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Clear-Site-Data", "Refresh", "Www-Authenticate"} {
		if v := resp.Header.Values(k); len(v) > 0 {
			t.Errorf("the browser got the remote's %s: %q", k, v)
		}
	}
	if len(resp.Trailer) > 0 {
		t.Errorf("the browser got the remote's trailers: %v", resp.Trailer)
	}
	for k, want := range map[string]string{"Content-Type": "application/json", "Etag": `"v1"`, "X-Request-Id": "req-1"} {
		if v := resp.Header.Get(k); v != want {
			t.Errorf("the browser got %s %q; want the remote's %q", k, v, want)
		}
	}
}

// redirecting is a remote that sends every request elsewhere (307 keeps method, body and,
// were it followed, the Authorization header), and where it sends them.
func redirecting(t *testing.T, status int) (rem, target *standIn) {
	target = newStandIn(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{}`) })
	rem = newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), status)
	})
	return rem, target
}

// TestProxyDoesNotFollowARedirect: a remote answering with a redirect gets a 502 at the
// hub, on a read, on a write (whether its /session or the write itself redirects) and on
// the stream; the picker's check of the user and the prober do not follow it either; and
// the redirect's target never gets a request, so never the user's credential.
func TestProxyDoesNotFollowARedirect(t *testing.T) {
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			rem, target := redirecting(t, status)
			hub, set := testHub(t, remote.Config{Name: "r", URL: rem.URL}, remote.Limits{ProbeInterval: time.Hour}, remote.Credential{Token: "alice-token"})
			if resp, body, err := do(t, http.MethodGet, hub.URL+"/api/v1/graph", nil, ""); err != nil || resp.StatusCode != http.StatusBadGateway {
				t.Errorf("a read the remote redirects: %v %v %s; want 502", resp, err, body)
			}
			if resp, body, err := do(t, http.MethodPost, hub.URL+"/api/v1/objects/u1/delete", http.Header{"Content-Type": {"application/json"}}, `{}`); err != nil || resp.StatusCode != http.StatusBadGateway {
				t.Errorf("a write whose /session the remote redirects: %v %v %s; want 502", resp, err, body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hub.URL, "http")+"/api/v1/stream", nil); err == nil {
				_, _, err = c.Read(ctx)
				var ce websocket.CloseError
				if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater {
					t.Errorf("a stream the remote redirects: %v; want a close, try again later", err)
				}
				c.CloseNow()
			}
			list := set.ForUser(context.Background(), []registry.Status{{Name: "r", State: registry.Ready}}, remote.Credential{Token: "alice-token"})
			if list[0].State != registry.Ready {
				t.Errorf("the picker's check of the user on a redirect: %+v; want the state as probed", list[0])
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { set.Run(ctx); close(done) }()
			testkit.EventuallyWithin(t, 30*time.Second, "the prober to find the remote failed", func() bool {
				rm, _ := set.Lookup("r")
				return rm.Status().State == registry.Failed
			})
			stop()
			<-done
			if n := len(target.requests()); n > 0 {
				t.Errorf("the redirect's target got %d requests (%s %s with Authorization %q ...); want none",
					n, target.requests()[0].Method, target.requests()[0].URL, target.requests()[0].Header.Get("Authorization"))
			}
			if len(rem.requests()) == 0 {
				t.Error("the remote got no request: the test tested nothing")
			}
		})
	}

	// A /session that answers, then a write the remote redirects.
	target := newStandIn(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{}`) })
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		if !sessionHandler(w, r) {
			http.Redirect(w, r, target.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		}
	})
	hub, _ := testHub(t, remote.Config{Name: "r", URL: rem.URL}, remote.Limits{}, remote.Credential{Token: "alice-token"})
	if resp, body, err := do(t, http.MethodPost, hub.URL+"/api/v1/objects/u1/delete", http.Header{"Content-Type": {"application/json"}}, `{}`); err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Errorf("a write the remote redirects: %v %v %s; want 502", resp, err, body)
	}
	if n := len(target.requests()); n > 0 {
		t.Errorf("the write's redirect target got %d requests; want none", n)
	}
}

// TestProxyAbortsAnOversizedAnswer: an answer over MaxResponseBytes is cut off with an
// error the browser sees (the connection aborted, the length short of the promised one or
// the chunked body unterminated), never passed on as if whole; one of exactly the bound
// passes.
func TestProxyAbortsAnOversizedAnswer(t *testing.T) {
	const bound = 4096
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		if sessionHandler(w, r) {
			return
		}
		var n int
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		body := strings.Repeat("x", n)
		if r.URL.Query().Has("chunked") {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush() // no Content-Length: chunked
			for len(body) > 0 {
				k := min(1000, len(body))
				io.WriteString(w, body[:k])
				w.(http.Flusher).Flush()
				body = body[k:]
			}
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(n))
		io.WriteString(w, body)
	})
	audits := &auditRecords{}
	hub, _ := testHub(t, remote.Config{Name: "r", URL: rem.URL}, remote.Limits{MaxResponseBytes: bound}, remote.Credential{}, audits)
	for _, q := range []string{"", "&chunked"} {
		resp, body, err := do(t, http.MethodGet, fmt.Sprintf("%s/api/v1/graph?n=%d%s", hub.URL, bound, q), nil, "")
		if err != nil || resp.StatusCode != http.StatusOK || len(body) != bound {
			t.Errorf("an answer of exactly the bound (%q): %v, %d bytes, %v; want it whole", q, resp, len(body), err)
		}
		resp, body, err = do(t, http.MethodGet, fmt.Sprintf("%s/api/v1/graph?n=%d%s", hub.URL, 4*bound, q), nil, "")
		if err == nil {
			t.Errorf("an answer of 4 times the bound (%q): %d, %d bytes, no error; want it aborted", q, resp.StatusCode, len(body))
		} else if len(body) > bound {
			t.Errorf("an answer of 4 times the bound (%q): %d bytes passed on; want at most %d", q, len(body), bound)
		}
	}
	// A write whose answer is cut off has its audit line all the same (it may have been
	// made), saying so: written before the answer is passed on, from the length it gives.
	resp, body, err := do(t, http.MethodPost, fmt.Sprintf("%s/api/v1/objects/u1/delete?n=%d", hub.URL, 4*bound), http.Header{"Content-Type": {"application/json"}}, `{"propagationPolicy":"Orphan"}`)
	if err == nil {
		t.Errorf("a write's answer of 4 times the bound: %d, %d bytes, no error; want it aborted", resp.StatusCode, len(body))
	}
	testkit.EventuallyWithin(t, 10*time.Second, "the cut-off write's audit record", func() bool { return len(audits.get()) == 1 })
	if a := audits.get()[0]; a.Path != "/objects/u1/delete" || a.Policy != "Orphan" || a.Error == "" {
		t.Errorf("the cut-off write's audit record: %+v; want its path, policy and an error", a)
	}
}

// TestProxyRefusesDotSegments: a path below /api/v1 with a "." or ".." segment, as sent
// or escaped (once, twice, in any case, or with an escaped slash) is refused at the hub
// and never reaches the remote, where it could name something beside its API.
func TestProxyRefusesDotSegments(t *testing.T) {
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{}`) })
	hub, _ := testHub(t, remote.Config{Name: "r", URL: rem.URL + "/gcscope"}, remote.Limits{}, remote.Credential{Token: "alice-token"})
	for _, p := range []string{
		"/objects/../../readyz", "/objects/./u1", "/..", "/.", "/objects/u1/..",
		"/%2e%2e/%2e%2e/other", "/%2E%2E/other", "/objects/.%2e/x", "/objects/%2E./x", "/objects/%2e/u1",
		"/objects/..%2F..%2F..%2Fother", "/objects/..%2f..%2fother", "/objects/%2e%2e%2fother",
		"/objects/%252e%252e/other", "/objects/..%5C..%5Cother",
	} {
		resp, body, err := do(t, http.MethodGet, hub.URL+"/api/v1"+p, nil, "")
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /api/v1%s through the hub: %v %v %s; want 400", p, resp, err, body)
		}
		resp, body, err = do(t, http.MethodPost, hub.URL+"/api/v1"+p, http.Header{"Content-Type": {"application/json"}}, `{}`)
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST /api/v1%s through the hub: %v %v %s; want 400", p, resp, err, body)
		}
	}
	for _, r := range rem.requests() {
		t.Errorf("the remote got %s %s", r.Method, r.URL.RequestURI())
	}
	// A path of the API passes, below the remote's base path.
	if resp, _, err := do(t, http.MethodGet, hub.URL+"/api/v1/objects/u1.v2..x/explain", nil, ""); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a path of the API: %v %v; want it passed on", resp, err)
	} else if r := rem.last("/gcscope/api/v1/objects/u1.v2..x/explain"); r == nil {
		t.Errorf("the remote got %v; want /gcscope/api/v1/objects/u1.v2..x/explain", rem.requests())
	}
}

// idToken is a JWT-shaped token of issuer (unsigned: the hub does not verify it).
func idToken(issuer string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"iss":"`+issuer+`","sub":"alice"}`)) + ".c2ln"
}

// TestForwardModes: a remote that takes ID tokens only (forward=id-token) gets single
// sign-on's ID token and refuses a user signed in to the hub with a pasted token — a read,
// a write, the stream and the picker's check alike — without that token ever being sent
// to it; a token-mode remote gets whichever the user signed in with.
func TestForwardModes(t *testing.T) {
	const issuer = "https://sso.example.com"
	jwt := idToken(issuer)
	if !remote.IsIDTokenOf(jwt, issuer) || remote.IsIDTokenOf(jwt, "https://other.example.com") ||
		remote.IsIDTokenOf("pasted-token", issuer) || remote.IsIDTokenOf(jwt, "") {
		t.Fatal("IsIDTokenOf tells an ID token of the issuer from others wrongly")
	}
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		if sessionHandler(w, r) {
			return
		}
		if r.URL.Path == "/api/v1/stream" {
			if c, err := websocket.Accept(w, r, nil); err == nil {
				c.Close(websocket.StatusNormalClosure, "")
			}
			return
		}
		fmt.Fprint(w, `{}`)
	})
	pasted := remote.Credential{Token: "pasted-sa-token"}
	sso := remote.Credential{Token: jwt, IDToken: true}
	for _, tc := range []struct {
		forward remote.Forward
		cred    remote.Credential
		refused bool
	}{
		{remote.ForwardIDToken, pasted, true},
		{remote.ForwardIDToken, sso, false},
		{remote.ForwardToken, pasted, false},
		{remote.ForwardToken, sso, false},
		{"", pasted, false},
	} {
		t.Run(fmt.Sprintf("%s/idtoken=%v", tc.forward, tc.cred.IDToken), func(t *testing.T) {
			before := len(rem.requests())
			hub, set := testHub(t, remote.Config{Name: "r", URL: rem.URL, Forward: tc.forward}, remote.Limits{}, tc.cred)
			want := http.StatusOK
			if tc.refused {
				want = http.StatusForbidden
			}
			if resp, body, err := do(t, http.MethodGet, hub.URL+"/api/v1/graph", nil, ""); err != nil || resp.StatusCode != want {
				t.Errorf("read: %v %v %s; want %d", resp, err, body, want)
			}
			if resp, body, err := do(t, http.MethodPost, hub.URL+"/api/v1/objects/u1/delete", http.Header{"Content-Type": {"application/json"}}, `{}`); err != nil || resp.StatusCode != want {
				t.Errorf("write: %v %v %s; want %d", resp, err, body, want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hub.URL, "http")+"/api/v1/stream", nil)
			if tc.refused {
				if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
					t.Errorf("stream: %v (%v); want 403", err, resp)
				}
			} else if err != nil {
				t.Errorf("stream: %v", err)
			}
			if c != nil {
				c.CloseNow()
			}
			list := set.ForUser(context.Background(), []registry.Status{{Name: "r", State: registry.Ready}}, tc.cred)
			if got := list[0].State == registry.Refused; got != tc.refused {
				t.Errorf("the picker: %+v; refused want %v", list[0], tc.refused)
			}
			reqs := rem.requests()[before:]
			if tc.refused && len(reqs) > 0 {
				t.Errorf("a refused credential reached the remote: %s %s with %q", reqs[0].Method, reqs[0].URL, reqs[0].Header.Get("Authorization"))
			}
			if !tc.refused {
				if len(reqs) == 0 {
					t.Fatal("nothing reached the remote")
				}
				for _, r := range reqs {
					if got := r.Header.Get("Authorization"); got != "Bearer "+tc.cred.Token {
						t.Errorf("%s reached the remote with %q; want the user's %q", r.URL.Path, got, tc.cred.Token)
					}
				}
			}
		})
	}
}

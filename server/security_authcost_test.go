package server

// Authentication cost: a flood of bad tokens must not starve good users. TokenReview
// results are cached (bounded, O(1)), one review per token at a time, and an address that
// keeps failing is answered 429 before anyone is asked.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/security"
)

// fakeReviews is a TokenReview API that accepts tokens starting with "good-", counts its
// calls, and can be held or made to fail.
type fakeReviews struct {
	calls  atomic.Int64
	hold   chan struct{} // when set, reviews wait for it to close
	fail   atomic.Bool
	refuse atomic.Bool // every token is refused (revoked)
}

func (f *fakeReviews) reviewer() *security.TokenReviewer { return f.reviewerAt(nil) }

// reviewerAt is reviewer keeping its answers as time goes by now.
func (f *fakeReviews) reviewerAt(now func() time.Time) *security.TokenReviewer {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.calls.Add(1)
		if f.hold != nil {
			<-f.hold
		}
		if f.fail.Load() {
			return true, nil, apierrors.NewServiceUnavailable("apiserver down")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if len(tr.Spec.Token) > 5 && tr.Spec.Token[:5] == "good-" && !f.refuse.Load() {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: tr.Spec.Token[5:]}}
		}
		return true, tr, nil
	})
	return security.NewTokenReviewerAt(cs.AuthenticationV1().TokenReviews(), now)
}

func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	f := &fakeReviews{}
	audit := &lockedBuffer{}
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newServer(Options{Auth: f.reviewer(), Audit: audit}, security.NewFailureLimiter(clock))
	s.failures.HoldTime = 0
	ask := func(ip, token, method string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/api/v1/session", nil)
		req.Host, req.RemoteAddr = "127.0.0.1:8080", ip+":40000"
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	if rec := ask("10.0.0.1", "good-alice", "GET"); rec.Code != 200 { // cached from now on
		t.Fatalf("good token: %d", rec.Code)
	}
	for i := range security.FailureBurst {
		if rec := ask("10.0.0.1", fmt.Sprintf("bad-%d", i), "GET"); rec.Code != 401 {
			t.Fatalf("bad token %d: %d, want 401", i, rec.Code)
		}
	}
	calls := f.calls.Load()
	rec := ask("10.0.0.1", "bad-more", "GET")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("bad token over the budget: %d, Retry-After %q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if f.calls.Load() != calls {
		t.Error("a request over the budget was reviewed")
	}
	// A fresh good token from the spent address is also refused (it cannot be told from a
	// guess without asking); a known good one passes; other addresses are not affected.
	if rec := ask("10.0.0.1", "good-bob", "GET"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("unknown token from the spent address: %d, want 429", rec.Code)
	}
	if rec := ask("10.0.0.1", "good-alice", "GET"); rec.Code != 200 {
		t.Errorf("known good token from the spent address: %d, want 200", rec.Code)
	}
	if rec := ask("10.0.0.2", "good-bob", "GET"); rec.Code != 200 {
		t.Errorf("another address: %d, want 200", rec.Code)
	}
	// The budget comes back with time: one failure every security.FailureRefill.
	mu.Lock()
	now = now.Add(security.FailureRefill)
	mu.Unlock()
	if rec := ask("10.0.0.1", "bad-again", "GET"); rec.Code != 401 {
		t.Errorf("after %v: %d, want 401 (one failure back)", security.FailureRefill, rec.Code)
	}
	// Writes refused for authentication are audited; reads are not.
	if rec := ask("10.0.0.1", "bad-write", "POST"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("write over the budget: %d", rec.Code)
	}
	entries := auditEntries(t, audit.String())
	if len(entries) != 1 || entries[0].Status != 429 || entries[0].Remote != "10.0.0.1:40000" || entries[0].Host != "127.0.0.1:8080" {
		t.Errorf("audit: %+v, want one 429 line for the write", entries)
	}
}

// TestSignedInUsersOutliveAFlood: a flood from rotating addresses spends the budget all
// addresses share, and then a token nobody has seen is refused (429) without a review;
// but a signed-in user's token, whose cached answer has expired, is reviewed again
// without that budget, until the cluster refuses it.
func TestSignedInUsersOutliveAFlood(t *testing.T) {
	f := &fakeReviews{}
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := newServer(Options{Auth: f.reviewerAt(clock)}, security.NewFailureLimiter(clock))
	s.failures.HoldTime = 0
	addr := 0
	ask := func(token string) *httptest.ResponseRecorder {
		addr++
		req := httptest.NewRequest("GET", "/api/v1/session", nil)
		req.Host, req.RemoteAddr = "127.0.0.1:8080", fmt.Sprintf("127.1.%d.%d:40000", addr/256, addr%256)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	if rec := ask("good-alice"); rec.Code != 200 {
		t.Fatalf("alice signs in: %d", rec.Code)
	}
	for i := range security.AllBurst {
		if rec := ask(fmt.Sprintf("bad-%d", i)); rec.Code != 401 {
			t.Fatalf("bad token %d from a new address: %d, want 401", i, rec.Code)
		}
	}
	calls := f.calls.Load()
	if rec := ask("bad-more"); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "many addresses") {
		t.Fatalf("a bad token once the shared budget is spent: %d %s, want 429 saying many addresses", rec.Code, rec.Body)
	}
	if rec := ask("good-bob"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a token never seen, while the budget is spent: %d, want 429", rec.Code)
	}
	if f.calls.Load() != calls {
		t.Errorf("%d reviews of refused requests", f.calls.Load()-calls)
	}
	// Alice's answer expires (a minute); the flood goes on, keeping the budget spent.
	later(2 * time.Minute)
	for i := range security.AllBurst + 1 {
		ask(fmt.Sprintf("bad-again-%d", i))
	}
	calls = f.calls.Load()
	if rec := ask("good-alice"); rec.Code != 200 {
		t.Errorf("alice, signed in before the flood, after her answer expired: %d %s, want 200", rec.Code, rec.Body)
	}
	if f.calls.Load() != calls+1 {
		t.Errorf("alice's token was reviewed %d times, want once again", f.calls.Load()-calls)
	}
	// Revoked: the cluster refuses her token when it is reviewed again; from then on it is
	// a stranger's, under the spent budget.
	f.refuse.Store(true)
	later(2 * time.Minute)
	if rec := ask("good-alice"); rec.Code != 401 {
		t.Fatalf("alice, revoked: %d, want 401", rec.Code)
	}
	for i := range security.AllBurst + 1 {
		ask(fmt.Sprintf("bad-third-%d", i))
	}
	calls = f.calls.Load()
	if rec := ask("good-alice"); rec.Code != http.StatusTooManyRequests || f.calls.Load() != calls {
		t.Errorf("alice's revoked token during the flood: %d after %d reviews, want 429 without one", rec.Code, f.calls.Load()-calls)
	}
}

func TestAuthorizationSchemeIsCaseInsensitive(t *testing.T) {
	f := &fakeReviews{}
	s := New(Options{Auth: f.reviewer()})
	for h, want := range map[string]int{"Bearer good-a": 200, "bearer good-a": 200, "BEARER good-a": 200, "Basic good-a": 401, "Bearergood-a": 401} {
		req := localRequest("/api/v1/session")
		req.Header.Set("Authorization", h)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Authorization %q: %d, want %d", h, rec.Code, want)
		}
	}
}

// floodFrom sends requests with random bad tokens from the loopback address src (a
// second client on this machine) until stop closes, from n goroutines; it counts 429s.
func floodFrom(base, src string, n int, stop <-chan struct{}) (throttled, sent *atomic.Int64, wait func()) {
	return flood(base, n, stop, &http.Transport{
		DialContext:         (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext,
		MaxIdleConnsPerHost: n,
	})
}

// floodRotating is floodFrom with each request from a new loopback address (127.1.x.y,
// a new connection each): no per-address budget ever applies.
func floodRotating(base string, n int, stop <-chan struct{}) (throttled, sent *atomic.Int64, wait func()) {
	var addr atomic.Uint32
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		a := addr.Add(1)
		src := net.IPv4(127, 1+byte(a>>16%254), byte(a>>8), byte(a))
		return (&net.Dialer{LocalAddr: &net.TCPAddr{IP: src}}).DialContext(ctx, network, address)
	}
	return flood(base, n, stop, &http.Transport{DialContext: dial, DisableKeepAlives: true})
}

// flood sends requests with random bad tokens through transport from n goroutines until
// stop closes; it counts the requests answered and the 429s.
func flood(base string, n int, stop <-chan struct{}, transport *http.Transport) (throttled, sent *atomic.Int64, wait func()) {
	throttled, sent = &atomic.Int64{}, &atomic.Int64{}
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			b := make([]byte, 16)
			for {
				select {
				case <-stop:
					return
				default:
				}
				rand.Read(b)
				req, _ := http.NewRequest("GET", base+"/api/v1/session", nil)
				req.Header.Set("Authorization", "Bearer bad-"+hex.EncodeToString(b))
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				sent.Add(1)
				if resp.StatusCode == http.StatusTooManyRequests {
					throttled.Add(1)
				}
			}
		})
	}
	return throttled, sent, wg.Wait
}

// reviewCounts counts the TokenReviews and SubjectAccessReviews of the clients whose
// transports it wraps.
type reviewCounts struct {
	tokenReviews, accesses atomic.Int64
}

func (c *reviewCounts) wrap(next http.RoundTripper) http.RoundTripper {
	return countingTransport{next: next, counts: c}
}

type countingTransport struct {
	next   http.RoundTripper
	counts *reviewCounts
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
		c.counts.tokenReviews.Add(1)
	case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
		c.counts.accesses.Add(1)
	}
	return c.next.RoundTrip(r)
}

// goodToken makes a fresh token of a new ServiceAccount (so no cache knows it).
func (e *apiEnv) goodToken(t testing.TB, ns string) string {
	t.Helper()
	_, token := e.newServiceAccount(t, ns)
	return token
}

// newServiceAccount makes a ServiceAccount in ns and a token of it.
func (e *apiEnv) newServiceAccount(t testing.TB, ns string) (name, token string) {
	t.Helper()
	ctx := context.Background()
	name = "sa-" + hex.EncodeToString(randomBytes(4))
	if _, err := e.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := e.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name, tok.Status.Token
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// reviewServer serves gcscope as --auth=kubernetes does (security.ClusterReviewers), with its
// reviews counted.
func (e *apiEnv) reviewServer(t testing.TB) (*httptest.Server, *reviewCounts) {
	t.Helper()
	cfg := rest.CopyConfig(e.config)
	counter := &reviewCounts{}
	cfg.Wrap(counter.wrap)
	auth, authz, err := security.ClusterReviewers(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := e.serve(t, Options{Auth: auth, Authorizer: authz})
	return ts, counter
}

// firstRequest times a fresh token's first request from 127.0.0.1.
func firstRequest(t testing.TB, base, token string) (time.Duration, int) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/session", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}).DialContext}}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return time.Since(start), resp.StatusCode
}

// TestBadTokenFloodLeavesGoodUsersServed: 100 clients sending bad tokens from 127.0.0.2
// spend that address's budget and are answered 429 without reviews; a good token from
// 127.0.0.1 is answered 200 meanwhile, and the flood costs the apiserver only the budget.
func TestBadTokenFloodLeavesGoodUsersServed(t *testing.T) {
	e := env(t)
	ns := e.namespace(t)
	ts, reviews := e.reviewServer(t)
	good := e.goodToken(t, ns)
	stop := make(chan struct{})
	start := time.Now()
	throttled, sent, wait := floodFrom(ts.URL, "127.0.0.2", 100, stop)
	testkit.Eventually(t, "the flood to be throttled", func() bool { return throttled.Load() >= 100 })
	_, code := firstRequest(t, ts.URL, good)
	close(stop)
	wait()
	elapsed := time.Since(start)
	if code != 200 {
		t.Errorf("the good token's first request during the flood: %d, want 200", code)
	}
	// The flood's reviews: its address's burst, its checks in flight, one more per refill
	// period; plus the good token's one.
	budget := int64(security.FailureBurst+security.AddrInFlight) + int64(elapsed/security.FailureRefill) + 1
	if n := reviews.tokenReviews.Load(); n > budget {
		t.Errorf("%d TokenReviews for %d flood requests in %v, want at most %d", n, sent.Load(), elapsed.Round(time.Millisecond), budget)
	}
	t.Logf("flood: %d requests, %d answered 429, %d TokenReviews in %v", sent.Load(), throttled.Load(), reviews.tokenReviews.Load(), elapsed.Round(time.Millisecond))
}

// BenchmarkAuthFlood: a valid token's first request (not cached: one TokenReview) during
// a flood of 100 concurrent clients with bad tokens from another address, against the
// same request with no flood, measured in the same run.
func BenchmarkAuthFlood(b *testing.B) {
	e := env(b)
	ns := e.namespace(b)
	ts, reviews := e.reviewServer(b)
	var quiet, flooded time.Duration
	var throttledTotal, sentTotal int64
	reviewsBefore := reviews.tokenReviews.Load()
	for range b.N {
		d, code := firstRequest(b, ts.URL, e.goodToken(b, ns))
		if code != 200 {
			b.Fatalf("baseline request: %d", code)
		}
		quiet += d
		stop := make(chan struct{})
		throttled, sent, wait := floodFrom(ts.URL, "127.0.0.2", 100, stop)
		testkit.Eventually(b, "the flood to be on and its budget spent", func() bool { return throttled.Load() >= 100 })
		token := e.goodToken(b, ns)
		d, code = firstRequest(b, ts.URL, token)
		close(stop)
		wait()
		if code != 200 {
			b.Fatalf("request during the flood: %d", code)
		}
		flooded += d
		throttledTotal += throttled.Load()
		sentTotal += sent.Load()
	}
	n := float64(b.N)
	b.ReportMetric(float64(quiet.Microseconds())/n/1000, "baseline:first-request-ms")
	b.ReportMetric(float64(flooded.Microseconds())/n/1000, "flooded:first-request-ms")
	b.ReportMetric(float64(flooded)/float64(quiet), "flooded/baseline")
	b.ReportMetric(float64(sentTotal)/n, "flood-requests/op")
	b.ReportMetric(float64(throttledTotal)/n, "flood-429s/op")
	b.ReportMetric(float64(reviews.tokenReviews.Load()-reviewsBefore)/n, "tokenreviews/op")
}

// signedInReader is a user signed in already (its token reviewed) who may list ConfigMaps
// in some namespaces, each holding one: each of its reads of a namespace it has not read
// yet costs a SubjectAccessReview.
type signedInReader struct {
	base, token string
	namespaces  []string
	next        int
}

func (e *apiEnv) signedInReader(t testing.TB, base string, namespaces int) *signedInReader {
	t.Helper()
	ctx := context.Background()
	home := e.namespace(t)
	name, token := e.newServiceAccount(t, home)
	r := &signedInReader{base: base, token: token}
	for range namespaces {
		ns := e.namespace(t)
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: home, Name: name}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"}}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held"}}
		if _, err := e.client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "the engine to observe "+ns+"/held", func() bool { n, ok := e.engine.Node(created.UID); return ok && n.Observed })
		r.namespaces = append(r.namespaces, ns)
	}
	if d, code := firstRequest(t, base, token); code != 200 {
		t.Fatalf("signing in: %d after %v", code, d)
	}
	return r
}

// read reads the graph of the next namespace, as the reader may: it must list the one
// ConfigMap there. It returns how long that took.
func (r *signedInReader) read(t testing.TB) time.Duration {
	t.Helper()
	if r.next == len(r.namespaces) {
		t.Fatalf("the reader has read all its %d namespaces", len(r.namespaces))
	}
	ns := r.namespaces[r.next]
	r.next++
	req, _ := http.NewRequest("GET", r.base+"/api/v1/graph?namespace="+ns, nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	start := time.Now()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("reading %s: %v", ns, err)
	}
	defer resp.Body.Close()
	took := time.Since(start)
	var g struct {
		Nodes []gc.NodeState `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil || resp.StatusCode != 200 {
		t.Fatalf("reading %s: %d, %v", ns, resp.StatusCode, err)
	}
	if len(g.Nodes) != 1 || g.Nodes[0].Name != "held" {
		t.Fatalf("reading %s: %d objects %v, want the one ConfigMap", ns, len(g.Nodes), g.Nodes)
	}
	return took
}

// TestRotatingFloodIsBoundedInTotal: bad tokens from a new address each request pass
// every per-address budget; the TokenReviews they cost are still bounded, for all
// addresses together, and a signed-in user's permission-checked reads are answered
// meanwhile, each with its SubjectAccessReview.
func TestRotatingFloodIsBoundedInTotal(t *testing.T) {
	e := env(t)
	ts, reviews := e.reviewServer(t)
	reader := e.signedInReader(t, ts.URL, 3)
	stop := make(chan struct{})
	start, before := time.Now(), reviews.tokenReviews.Load()
	_, sent, wait := floodRotating(ts.URL, 60, stop)
	testkit.Eventually(t, "the flood to send 300 requests", func() bool { return sent.Load() >= 300 })
	accesses := reviews.accesses.Load()
	for range 3 {
		reader.read(t)
	}
	close(stop)
	wait()
	elapsed := time.Since(start)
	if n := reviews.accesses.Load() - accesses; n < 3 {
		t.Errorf("the signed-in user's 3 reads of new namespaces made %d SubjectAccessReviews, want one each at least", n)
	}
	// At most the shared burst, one more per refill, and the checks in flight when the
	// flood stopped (the review client's slots).
	budget := int64(security.AllBurst) + int64(elapsed/security.AllRefill) + 16
	if n := reviews.tokenReviews.Load() - before; n > budget {
		t.Errorf("%d TokenReviews for %d flood requests from rotating addresses in %v, want at most %d", n, sent.Load(), elapsed.Round(time.Millisecond), budget)
	}
	t.Logf("rotating flood: %d requests, %d TokenReviews in %v", sent.Load(), reviews.tokenReviews.Load()-before, elapsed.Round(time.Millisecond))
}

// BenchmarkSignedInReadsDuringFloods: a signed-in user's permission-checked reads (each
// of a namespace not read before: one SubjectAccessReview) with no flood, during a flood
// of bad tokens from one address (100 clients) and during one from a new address each
// request (60 clients), measured in the same run. The goal: the median read during
// either flood at most 2× the quiet one, no read over a second.
func BenchmarkSignedInReadsDuringFloods(b *testing.B) {
	const reads = 16
	e := env(b)
	ts, reviews := e.reviewServer(b)
	reader := e.signedInReader(b, ts.URL, 3*reads*b.N)
	phase := func(flood func(stop <-chan struct{}) (sent *atomic.Int64, wait func())) []time.Duration {
		var sent *atomic.Int64
		var wait func()
		stop := make(chan struct{})
		if flood != nil {
			sent, wait = flood(stop)
			testkit.Eventually(b, "the flood to be on", func() bool { return sent.Load() >= 200 })
		}
		took := make([]time.Duration, reads)
		for i := range took {
			took[i] = reader.read(b)
		}
		close(stop)
		if wait != nil {
			wait()
		}
		return took
	}
	var quiet, single, rotating []time.Duration
	var tokenReviews int64
	var floodTime time.Duration
	b.ResetTimer()
	for range b.N {
		quiet = append(quiet, phase(nil)...)
		single = append(single, phase(func(stop <-chan struct{}) (*atomic.Int64, func()) {
			_, sent, wait := floodFrom(ts.URL, "127.0.0.2", 100, stop)
			return sent, wait
		})...)
		before, start := reviews.tokenReviews.Load(), time.Now()
		rotating = append(rotating, phase(func(stop <-chan struct{}) (*atomic.Int64, func()) {
			_, sent, wait := floodRotating(ts.URL, 60, stop)
			return sent, wait
		})...)
		tokenReviews += reviews.tokenReviews.Load() - before
		floodTime += time.Since(start)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	median := func(ds []time.Duration) time.Duration { ds = slices.Clone(ds); slices.Sort(ds); return ds[len(ds)/2] }
	b.ReportMetric(ms(median(quiet)), "quiet:p50-ms")
	b.ReportMetric(ms(slices.Max(quiet)), "quiet:max-ms")
	b.ReportMetric(ms(median(single)), "one-address:p50-ms")
	b.ReportMetric(ms(slices.Max(single)), "one-address:max-ms")
	b.ReportMetric(ms(median(rotating)), "rotating:p50-ms")
	b.ReportMetric(ms(slices.Max(rotating)), "rotating:max-ms")
	b.ReportMetric(float64(median(single))/float64(median(quiet)), "one-address/quiet")
	b.ReportMetric(float64(median(rotating))/float64(median(quiet)), "rotating/quiet")
	b.ReportMetric(float64(tokenReviews)/floodTime.Seconds(), "rotating:tokenreviews/s")
}

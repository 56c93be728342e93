package server

// Authentication cost: a flood of bad tokens must not starve good users. TokenReview
// results are cached (bounded, O(1)), one review per token at a time, and an address that
// keeps failing is answered 429 before anyone is asked.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/security"
)

// fakeReviews is a TokenReview API that accepts tokens starting with "good-", counts its
// calls, and can be held or made to fail.
type fakeReviews struct {
	calls atomic.Int64
	hold  chan struct{} // when set, reviews wait for it to close
	fail  atomic.Bool
}

func (f *fakeReviews) reviewer() *TokenReviewer {
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
		if len(tr.Spec.Token) > 5 && tr.Spec.Token[:5] == "good-" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: tr.Spec.Token[5:]}}
		}
		return true, tr, nil
	})
	return NewTokenReviewer(cs.AuthenticationV1().TokenReviews())
}

func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	f := &fakeReviews{}
	audit := &lockedBuffer{}
	s := New(Options{Auth: f.reviewer(), Audit: audit})
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s.failures = security.NewFailureLimiter(clock)
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
	throttled, sent = &atomic.Int64{}, &atomic.Int64{}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext,
		MaxIdleConnsPerHost: n,
	}}
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

// countingTransport counts the requests a client makes.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// goodToken makes a fresh token of a new ServiceAccount (so no cache knows it).
func (e *apiEnv) goodToken(t testing.TB, ns string) string {
	t.Helper()
	ctx := context.Background()
	name := "sa-" + hex.EncodeToString(randomBytes(4))
	if _, err := e.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := e.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// reviewServer serves gcscope with --auth=kubernetes over a TokenReview client whose
// requests are counted.
func (e *apiEnv) reviewServer(t testing.TB) (*httptest.Server, *countingTransport) {
	t.Helper()
	cfg := rest.CopyConfig(e.config)
	counter := &countingTransport{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	cfg.QPS, cfg.Burst = 50, 100
	cs := kubernetes.NewForConfigOrDie(cfg)
	ts, _ := e.serve(t, Options{Auth: NewTokenReviewer(cs.AuthenticationV1().TokenReviews())})
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
	if n := reviews.n.Load(); n > budget {
		t.Errorf("%d TokenReviews for %d flood requests in %v, want at most %d", n, sent.Load(), elapsed.Round(time.Millisecond), budget)
	}
	t.Logf("flood: %d requests, %d answered 429, %d TokenReviews in %v", sent.Load(), throttled.Load(), reviews.n.Load(), elapsed.Round(time.Millisecond))
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
	reviewsBefore := reviews.n.Load()
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
	b.ReportMetric(float64(reviews.n.Load()-reviewsBefore)/n, "tokenreviews/op")
}

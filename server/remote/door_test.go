package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/remote"
	"github.com/gcscope/gcscope/server/security"
)

const (
	carolToken = "carol-token-0123456789"
	daveToken  = "dave-token-01234567890"
)

// TestTheRemotesDecideWhoSignsIn: a hub of remotes alone whose door is its remotes
// (--auth=kubernetes at a hub: each remote reviews the credential with its own cluster).
// a knows alice and bob, b knows alice, carol and dave, and "open" runs without
// authentication. A user signs in when a remote that authenticates accepts them, under the
// name it gives; a remote that authenticates no one lets no one in; a remote that cannot be
// asked makes the hub say so (503), not refuse (401), and once back signs its users in.
func TestTheRemotesDecideWhoSignsIn(t *testing.T) {
	a, b := cluster(t, "a"), cluster(t, "b")
	ga := remoteGcscope(t, a, "a", aliceToken+" alice", bobToken+" bob")
	gb := remoteGcscope(t, b, "b", aliceToken+" alice", carolToken+" carol", daveToken+" dave")
	open := remoteGcscope(t, a, "open")
	h := startHub(t, map[string]*gcscope{"a": ga, "b": gb, "open": open}, []string{"a", "b", "open"},
		func(s *remote.Set) security.Authenticator { return s.Door(nil) })
	alice, bob, carol := h.as(aliceToken), h.as(bobToken), h.as(carolToken)

	var list clusterList
	testkit.Eventually(t, "the three remotes listed ready for alice", func() bool {
		list = clusterList{}
		return alice.getJSON("/api/v1/clusters", &list) == http.StatusOK &&
			stateOf(list, "a").State == registry.Ready && stateOf(list, "b").State == registry.Ready && stateOf(list, "open").State == registry.Ready
	})
	// Carol is known to b alone: she signs in, b serves her, a refuses her.
	list = clusterList{}
	if code := carol.getJSON("/api/v1/clusters", &list); code != http.StatusOK {
		t.Fatalf("carol's list: %d; want her signed in (b accepts her)", code)
	}
	if st := stateOf(list, "a"); st.State != registry.Refused || !strings.Contains(st.Reason, "does not accept your credential") {
		t.Errorf("a for carol: %+v; want refused, saying so", st)
	}
	if st := stateOf(list, "b"); st.State != registry.Ready {
		t.Errorf("b for carol: %+v; want ready", st)
	}
	var who struct{ User struct{ Name string } }
	if code := carol.getJSON("/api/v1/clusters/b/session", &who); code != http.StatusOK || who.User.Name != "carol" {
		t.Errorf("b's session for carol: %d %+v; want carol", code, who)
	}
	if code, _, body := carol.do(http.MethodGet, "/api/v1/clusters/a/graph", nil, nil); code != http.StatusForbidden {
		t.Errorf("carol's read of a: %d %s; want 403", code, body)
	}
	// A stranger: refused, though "open" would take any credential.
	stranger := h.as("stranger-token-0123456789")
	if code, hdr, body := stranger.do(http.MethodGet, "/api/v1/clusters", nil, nil); code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
		t.Errorf("a stranger at the hub: %d %s; want 401 (a remote without authentication signs no one in)", code, body)
	}

	// The hub's own audit names a user as the remote that signed them in named them.
	code, _, body := bob.do(http.MethodPost, "/api/v1/clusters/a/objects/no-such-uid/delete",
		map[string]any{"propagationPolicy": "Background"}, http.Header{"Content-Type": {"application/json"}})
	if code == http.StatusOK {
		t.Errorf("bob's delete of no object: %d %s", code, body)
	}
	testkit.Eventually(t, "the hub's audit line of bob's write", func() bool { return strings.Contains(h.Audit.String(), `"user":"bob"`) })

	// b is down: dave, whom only b knows, cannot be told apart from a stranger now, so the
	// hub says it cannot ask (503), not that he is refused (401).
	gb.down()
	dave := h.as(daveToken)
	if code, _, body := dave.do(http.MethodGet, "/api/v1/clusters", nil, nil); code != http.StatusServiceUnavailable || !strings.Contains(string(body), `cluster \"b\"`) {
		t.Errorf("dave while b is down: %d %s; want 503 naming b", code, body)
	}
	// Carol, accepted within the minute, is still signed in; b is listed failed for her.
	testkit.Eventually(t, "b listed failed for carol", func() bool {
		list = clusterList{}
		return carol.getJSON("/api/v1/clusters", &list) == http.StatusOK && stateOf(list, "b").State == registry.Failed
	})
	gb.up()
	testkit.Eventually(t, "dave signed in once b is back", func() bool {
		code, _, _ := dave.do(http.MethodGet, "/api/v1/clusters", nil, nil)
		return code == http.StatusOK
	})
}

// checkedIDTokens is single sign-on whose valid ID tokens are those listed.
type checkedIDTokens struct {
	issuer string
	valid  map[string]bool
}

func (c checkedIDTokens) Issuer() string { return c.issuer }

func (c checkedIDTokens) VerifyIDToken(_ context.Context, token string) error {
	if !c.valid[token] {
		return errors.New("bad signature")
	}
	return nil
}

// TestTheDoorForwardsNoForgedIDToken: a token that claims to be single sign-on's ID token
// is checked at the hub before any remote gets it: a forged one (the issuer's name, a
// signature of no key of its) is refused without a request to the remote, whose budget of
// failed authentications is the hub's; a real one is forwarded and the remote's answer
// signs the user in. A remote given forward=id-token gets no pasted token either.
func TestTheDoorForwardsNoForgedIDToken(t *testing.T) {
	const issuer = "https://sso.example.com"
	real, forged := idToken(issuer), idToken(issuer)+"x"
	rem := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+real {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"unauthorized","message":"a valid bearer token is required"}`)
			return
		}
		fmt.Fprint(w, `{"user":{"name":"oidc:alice"},"authenticated":true,"csrfToken":"t"}`)
	})
	set, err := remote.NewSet([]remote.Config{{Name: "r", URL: rem.URL, Forward: remote.ForwardIDToken}}, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	door := set.Door(checkedIDTokens{issuer, map[string]bool{real: true}})
	for _, token := range []string{forged, "pasted-token-0123456789"} {
		if u, err := door.Authenticate(context.Background(), token); !errors.Is(err, security.ErrUnauthenticated) {
			t.Errorf("%.20s...: %+v, %v; want refused", token, u, err)
		}
	}
	if n := len(rem.requests()); n != 0 {
		t.Errorf("the remote got %d requests (the first with %q); want none", n, rem.requests()[0].Header.Get("Authorization"))
	}
	if u, err := door.Authenticate(context.Background(), real); err != nil || u.Name != "oidc:alice" {
		t.Errorf("the real ID token: %+v, %v; want oidc:alice, as the remote says", u, err)
	}
	if n := len(rem.requests()); n != 1 {
		t.Errorf("the remote got %d requests; want 1, for the real ID token", n)
	}
}

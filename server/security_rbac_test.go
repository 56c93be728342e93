package server

// Per-user reads with --auth=kubernetes: each user reads only what it may list, on every
// surface (graph, object, explain, prediction, DOT, queues, metrics, the stream), and no
// name of an object it may not list leaves the server inside another object's answer.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/demo"
	"github.com/gcscope/gcscope/server/edge"
	"github.com/gcscope/gcscope/server/graph"
	"github.com/gcscope/gcscope/server/objects"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/stream/streamtest"
	"github.com/gcscope/gcscope/server/wire"
)

// rbacWorld is two namespaces of objects (alpha-* in A, bravo-* in B) and users with
// different bindings.
type rbacWorld struct {
	e      *apiEnv
	nsA    string
	nsB    string
	tokens map[string]string // user -> bearer token
	uids   map[string]types.UID
}

func (w *rbacWorld) serviceAccount(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := w.e.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := w.e.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

// grantList lets the service account ns/name list resources (core group) in roleNS.
func (w *rbacWorld) grantList(t *testing.T, roleNS, ns, name string, resources ...string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name + "-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: resources, Verbs: []string{"list", "watch", "get"}}}}
	if _, err := w.e.client.RbacV1().Roles(roleNS).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name + "-reader"}}
	if _, err := w.e.client.RbacV1().RoleBindings(roleNS).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (w *rbacWorld) object(t *testing.T, ns, kind, name string, finalizers []string, owner types.UID, ownerName string) types.UID {
	t.Helper()
	ctx := context.Background()
	meta := metav1.ObjectMeta{Name: name, Finalizers: finalizers}
	if owner != "" {
		meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: ownerName, UID: owner, BlockOwnerDeletion: ptr.To(true)}}
	}
	var uid types.UID
	switch kind {
	case "ConfigMap":
		cm, err := w.e.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid = cm.UID
	case "Secret":
		s, err := w.e.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uid = s.UID
	}
	testkit.Eventually(t, "the engine observes "+name, func() bool { n, ok := w.e.engine.Node(uid); return ok && n.Observed })
	w.uids[name] = uid
	return uid
}

func newRBACWorld(t *testing.T) *rbacWorld {
	e := env(t)
	w := &rbacWorld{e: e, nsA: e.namespace(t), nsB: e.namespace(t), tokens: map[string]string{}, uids: map[string]types.UID{}}
	for _, u := range []struct{ ns, name string }{{w.nsA, "alice"}, {w.nsB, "bob"}, {w.nsA, "carol"}, {w.nsA, "nobody"}, {w.nsA, "scraper"}} {
		w.tokens[u.name] = w.serviceAccount(t, u.ns, u.name)
	}
	w.grantList(t, w.nsA, w.nsA, "alice", "configmaps", "secrets")
	w.grantList(t, w.nsB, w.nsB, "bob", "configmaps", "secrets")
	w.grantList(t, w.nsA, w.nsA, "carol", "configmaps") // not secrets
	ctx := context.Background()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "gcscope-metrics-"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	cr, err := e.client.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: w.nsA, Name: "scraper"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name}}
	if _, err := e.client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
		e.client.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
	})

	for _, side := range []struct{ ns, p string }{{w.nsA, "alpha"}, {w.nsB, "bravo"}} {
		owner := w.object(t, side.ns, "ConfigMap", side.p+"-owner", nil, "", "")
		w.object(t, side.ns, "ConfigMap", side.p+"-child", nil, owner, side.p+"-owner")
		w.object(t, side.ns, "Secret", side.p+"-secret-child", nil, owner, side.p+"-owner")
	}
	// A foreground deletion in A waiting on a ConfigMap and a Secret, both held.
	fg := w.object(t, w.nsA, "ConfigMap", "alpha-fg", nil, "", "")
	w.object(t, w.nsA, "ConfigMap", "alpha-held-cm", []string{"test.gcscope.io/hold"}, fg, "alpha-fg")
	w.object(t, w.nsA, "Secret", "alpha-held-secret", []string{"test.gcscope.io/hold"}, fg, "alpha-fg")
	t.Cleanup(func() {
		for _, n := range []string{"alpha-held-cm"} {
			e.client.CoreV1().ConfigMaps(w.nsA).Patch(context.Background(), n, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		e.client.CoreV1().Secrets(w.nsA).Patch(context.Background(), "alpha-held-secret", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	bg := metav1.DeletePropagationForeground
	if err := e.client.CoreV1().ConfigMaps(w.nsA).Delete(ctx, "alpha-fg", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "alpha-fg to wait for its blockers", func() bool {
		ex, _ := e.engine.Explain(fg)
		return ex.Object.DeletingDependents && len(ex.Blockers) == 2
	})
	return w
}

// serve starts gcscope as --auth=kubernetes runs it: TokenReview and SubjectAccessReview.
func (w *rbacWorld) serve(t *testing.T) *httptest.Server {
	ts, _ := w.e.serve(t, Options{Auth: security.NewTokenReviewer(w.e.client.AuthenticationV1().TokenReviews()),
		Authorizer: security.NewAccessReviewer(w.e.client.AuthorizationV1().SubjectAccessReviews())})
	return ts
}

func TestPerUserReadsOnEverySurface(t *testing.T) {
	w := newRBACWorld(t)
	ts := w.serve(t)
	c := newClient(t, ts)
	as := func(user string) http.Header { return http.Header{"Authorization": {"Bearer " + w.tokens[user]}} }
	get := func(user, path string) (int, string) {
		t.Helper()
		code, body := c.do("GET", path, nil, as(user))
		return code, string(body)
	}
	graphNames := func(user string) []string {
		t.Helper()
		code, body := get(user, "/api/v1/graph")
		var g graph.GraphResponse
		if code != 200 || json.Unmarshal([]byte(body), &g) != nil {
			t.Fatalf("graph as %s: %d %s", user, code, body)
		}
		var names []string
		for _, n := range g.Nodes {
			names = append(names, n.Namespace+"/"+n.Name)
		}
		return names
	}
	// mine: what each user must see among the test's objects, and nothing of other namespaces.
	mine := map[string][]string{
		"alice": {"alpha-owner", "alpha-child", "alpha-secret-child", "alpha-fg", "alpha-held-cm", "alpha-held-secret"},
		"bob":   {"bravo-owner", "bravo-child", "bravo-secret-child"},
		"carol": {"alpha-owner", "alpha-child", "alpha-fg", "alpha-held-cm"},
	}
	ownNS := map[string]string{"alice": w.nsA, "bob": w.nsB, "carol": w.nsA}
	for user, want := range mine {
		names := graphNames(user)
		for _, n := range names {
			if !strings.HasPrefix(n, ownNS[user]+"/") {
				t.Errorf("%s sees %s, outside namespace %s", user, n, ownNS[user])
			}
		}
		var got []string
		for _, n := range names {
			if name := strings.TrimPrefix(n, ownNS[user]+"/"); strings.HasPrefix(name, "alpha-") || strings.HasPrefix(name, "bravo-") {
				got = append(got, name)
			}
		}
		if !sameSet(got, want) {
			t.Errorf("%s sees %v, want exactly %v", user, got, want)
		}
	}
	// The summary counts what each user may list, and nothing else.
	for user, ns := range ownNS {
		code, body := get(user, "/api/v1/summary")
		var sum wire.Summary
		if code != 200 || json.Unmarshal([]byte(body), &sum) != nil {
			t.Fatalf("summary as %s: %d %s", user, code, body)
		}
		if len(sum.Namespaces) != 1 || sum.Namespaces[0].Name != ns || sum.Namespaces[0].Objects != sum.Objects {
			t.Errorf("%s's summary counts namespaces %+v; want %s's alone", user, sum.Namespaces, ns)
		}
		kinds := map[string]int{}
		for _, k := range sum.Kinds {
			kinds[k.Kind] += k.Objects
		}
		if user == "carol" && kinds["Secret"] > 0 {
			t.Errorf("carol's summary counts %d Secrets she may not list", kinds["Secret"])
		}
		if want := len(mine[user]); kinds["ConfigMap"]+kinds["Secret"] < want {
			t.Errorf("%s's summary counts %v, want at least the %d objects it sees", user, kinds, want)
		}
	}
	if names := graphNames("nobody"); len(names) != 0 {
		t.Errorf("a user with no RBAC sees %d objects: %v", len(names), names[:min(5, len(names))])
	}

	// Other surfaces: no name of the other side in any answer, and 404 for its objects.
	otherNames := map[string][]string{"alice": {"bravo-", w.nsB}, "bob": {"alpha-", w.nsA}, "carol": {"bravo-", w.nsB, "secret-child", "held-secret"}, "nobody": {"alpha-", "bravo-"}}
	for user, forbidden := range otherNames {
		for _, path := range []string{"/api/v1/queues", "/debug/controllers/garbagecollector/graph", "/api/v1/graph",
			"/api/v1/objects/" + string(w.uids["alpha-owner"]), "/api/v1/objects/" + string(w.uids["alpha-owner"]) + "/explain",
			"/api/v1/objects/" + string(w.uids["alpha-fg"]) + "/explain"} {
			_, body := get(user, path)
			for _, f := range forbidden {
				if strings.Contains(body, f) {
					i := strings.Index(body, f)
					t.Errorf("%s GET %s: the answer names %q: …%s…", user, path, f, body[max(0, i-300):min(len(body), i+100)])
				}
			}
		}
	}
	for _, tc := range []struct{ user, object string }{{"alice", "bravo-owner"}, {"bob", "alpha-owner"}, {"carol", "alpha-secret-child"}, {"nobody", "alpha-owner"}} {
		for _, suffix := range []string{"", "/explain"} {
			if code, body := get(tc.user, "/api/v1/objects/"+string(w.uids[tc.object])+suffix); code != 404 {
				t.Errorf("%s GET %s%s: %d %.200s; want 404 as for an unknown uid", tc.user, tc.object, suffix, code, body)
			}
		}
	}

	// Explanations and predictions count what they leave out.
	var ex objects.ExplainResponse
	_, body := get("carol", "/api/v1/objects/"+string(w.uids["alpha-fg"])+"/explain")
	json.Unmarshal([]byte(body), &ex)
	if ex.HiddenBlockers != 1 || len(ex.Blockers) != 1 || ex.Blockers[0].Object.Name != "alpha-held-cm" ||
		!strings.Contains(ex.Text, "1 blocking dependent you may not see") || !strings.Contains(ex.Next, "2 blocking dependents") {
		t.Errorf("carol's explanation of alpha-fg: %s", body)
	}
	cs := c.sessionAs(as("carol"))
	h := as("carol")
	h.Set("Origin", ts.URL)
	h.Set(edge.CSRFHeader, cs.CSRFToken)
	code, pbody := c.do("POST", "/api/v1/objects/"+string(w.uids["alpha-owner"])+"/delete", `{"propagationPolicy":"Background","dryRun":true}`, h)
	var pred objects.DeleteResponse
	json.Unmarshal(pbody, &pred)
	if code != 200 || pred.Hidden != 1 || len(pred.Prediction.Deleted) != 2 || strings.Contains(string(pbody), "secret") {
		t.Errorf("carol's prediction for alpha-owner: %d %s; want the owner and its ConfigMap, and 1 hidden", code, pbody)
	}
	// The prediction is the collector's; whether carol may delete is the cluster's RBAC to
	// say, asked as her with a server-side dry run (a trial's preview promised a delete the
	// apiserver then refused). Nothing is deleted either way.
	if !strings.Contains(pred.Refusal, "cannot delete resource \"configmaps\"") {
		t.Errorf("carol (no delete) previews alpha-owner's delete with refusal %q: want the apiserver's Forbidden", pred.Refusal)
	}
	if _, err := w.e.client.CoreV1().ConfigMaps(w.nsA).Get(context.Background(), "alpha-owner", metav1.GetOptions{}); err != nil {
		t.Errorf("carol's preview deleted alpha-owner: %v", err)
	}
	// Granted delete, bob's preview has no refusal, once the apiserver's RBAC knows of the
	// grant (a SubjectAccessReview says so: its informers may lag under load).
	if _, err := w.e.client.RbacV1().Roles(w.nsB).Create(context.Background(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "bob-deleter"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.e.client.RbacV1().RoleBindings(w.nsB).Create(context.Background(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-deleter"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: w.nsB, Name: "bob"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "bob-deleter"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the apiserver to let bob delete ConfigMaps", func() bool {
		sar, err := w.e.client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + w.nsB + ":bob", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + w.nsB, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: w.nsB, Verb: "delete", Resource: "configmaps"}}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed
	})
	hb := as("bob")
	hb.Set("Origin", ts.URL)
	hb.Set(edge.CSRFHeader, c.sessionAs(as("bob")).CSRFToken)
	var bobPred objects.DeleteResponse
	if code, body := c.do("POST", "/api/v1/objects/"+string(w.uids["bravo-owner"])+"/delete", `{"propagationPolicy":"Background","dryRun":true}`, hb); code != 200 ||
		json.Unmarshal(body, &bobPred) != nil || bobPred.Refusal != "" {
		t.Errorf("bob, granted delete, previews bravo-owner's delete: %d, refusal %q; want none", code, bobPred.Refusal)
	}
	if _, err := w.e.client.CoreV1().ConfigMaps(w.nsB).Get(context.Background(), "bravo-owner", metav1.GetOptions{}); err != nil {
		t.Errorf("bob's preview deleted bravo-owner: %v", err)
	}
	h = as("bob")
	h.Set("Origin", ts.URL)
	h.Set(edge.CSRFHeader, c.sessionAs(as("bob")).CSRFToken)
	if code, body := c.do("POST", "/api/v1/objects/"+string(w.uids["alpha-owner"])+"/delete", `{"propagationPolicy":"Background","dryRun":true}`, h); code != 404 {
		t.Errorf("bob predicts alice's object: %d %s; want 404", code, body)
	}

	// /metrics needs get on the non-resource URL.
	if code, body := get("nobody", "/metrics"); code != 403 || !strings.Contains(body, "nonResourceURLs") {
		t.Errorf("metrics without the permission: %d %.200s", code, body)
	}
	if code, body := get("alice", "/metrics"); code != 403 {
		t.Errorf("metrics as alice (no permission): %d %.100s", code, body)
	}
	if code, body := get("scraper", "/metrics"); code != 200 || !strings.Contains(body, "gcscope_") {
		t.Errorf("metrics as the scraper: %d %.100s", code, body)
	}
}

// sessionAs fetches a session with extra headers.
func (c *client) sessionAs(h http.Header) edge.SessionResponse {
	c.t.Helper()
	var s edge.SessionResponse
	code, body := c.do("GET", "/api/v1/session", nil, h)
	if code != 200 || json.Unmarshal(body, &s) != nil {
		c.t.Fatalf("session: %d %s", code, body)
	}
	return s
}

// TestPerUserStream: each user's stream carries its own namespace only: the snapshot, and
// what happens next in both namespaces.
func TestPerUserStream(t *testing.T) {
	w := newRBACWorld(t)
	e := w.e
	ts := w.serve(t)
	type stream struct {
		conn   *websocket.Conn
		frames chan []byte
		first  []byte // the snapshot, read before anything is published
	}
	dialQuery := func(user, query string) *stream {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/api/v1/stream"+query,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + w.tokens[user]}}})
		if err != nil {
			t.Fatalf("stream as %s: %v", user, err)
		}
		conn.SetReadLimit(-1)
		s := &stream{conn: conn, frames: make(chan []byte, 1024)}
		go func() {
			defer close(s.frames)
			for {
				_, data, err := conn.Read(context.Background())
				if err != nil {
					return
				}
				s.frames <- data
			}
		}()
		t.Cleanup(func() { conn.CloseNow() })
		return s
	}
	dial := func(user string) *stream { t.Helper(); return dialQuery(user, "") }
	alice, bob, nobody := dial("alice"), dial("bob"), dial("nobody")
	// The streams' snapshots first: an event published before a stream's snapshot is
	// taken is part of the past it summarizes, and a shadow decision is not in a snapshot.
	for user, s := range map[string]*stream{"alice": alice, "bob": bob} {
		select {
		case s.first = <-s.frames:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s's stream sent no snapshot", user)
		}
	}
	// Shadow decisions on both sides: alice's names bob's owner in its look-up.
	shadowOn := func(ns, name string, forObj *gc.ObjectRef) gc.Event {
		return gc.Event{Type: gc.ShadowChange, Shadow: &gc.ShadowDecision{ID: 1, Outcome: gc.ShadowPending,
			Action: gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Policy: "Background", Shadow: true, For: forObj,
				Reason: "look up owner of " + name + ": found",
				Object: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name, UID: w.uids[name]}}}}
	}
	bravoOwner := &gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: w.nsB, Name: "bravo-owner", UID: w.uids["bravo-owner"]}
	e.engine.Feed().Publish(shadowOn(w.nsA, "alpha-owner", bravoOwner), shadowOn(w.nsB, "bravo-owner", nil))
	// Things happen on both sides: new objects, an update, a delete.
	w.object(t, w.nsA, "ConfigMap", "alpha-late", nil, "", "")
	w.object(t, w.nsB, "ConfigMap", "bravo-late", nil, "", "")
	w.object(t, w.nsB, "Secret", "bravo-late-secret", nil, w.uids["bravo-late"], "bravo-late")
	if err := e.client.CoreV1().ConfigMaps(w.nsB).Delete(context.Background(), "bravo-child", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CoreV1().ConfigMaps(w.nsA).Delete(context.Background(), "alpha-child", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// follow applies a stream's frames to a model until it holds have and not gone (or a
	// minute passes); it returns every frame's bytes.
	follow := func(user string, s *stream, have, gone string) string {
		t.Helper()
		var all strings.Builder
		m := streamtest.NewModel()
		holds := func(name string) bool {
			for _, n := range m.Nodes {
				if n.Name == name {
					return true
				}
			}
			return false
		}
		take := func(data []byte) {
			all.Write(data)
			all.WriteByte('\n')
			var f streamtest.Frame
			if err := json.Unmarshal(data, &f); err != nil {
				t.Fatal(err)
			}
			f.Raw = data
			if err := m.Apply(f); err != nil {
				t.Fatalf("%s: %v", user, err)
			}
		}
		take(s.first)
		deadline := time.After(time.Minute)
		for !m.Started || !holds(have) || holds(gone) {
			select {
			case data, ok := <-s.frames:
				if !ok {
					t.Fatalf("%s's stream closed", user)
				}
				take(data)
			case <-deadline:
				t.Fatalf("%s's stream never showed %s without %s", user, have, gone)
			}
		}
		return all.String()
	}
	a := follow("alice", alice, "alpha-late", "alpha-child")
	b := follow("bob", bob, "bravo-late-secret", "bravo-child")
	if !strings.Contains(a, `"shadow":{`) || !strings.Contains(b, `"shadow":{`) {
		t.Errorf("a shadow decision on an object the user may see did not reach the user's stream")
	}
	for _, f := range []string{"bravo-", w.nsB} {
		if strings.Contains(a, f) {
			t.Errorf("alice's stream names %q", f)
		}
	}
	for _, f := range []string{"alpha-", w.nsA} {
		if strings.Contains(b, f) {
			t.Errorf("bob's stream names %q", f)
		}
	}
	// A stream resumed from before all that (since=) gets it as the live streams did:
	// nothing of bob's, the deletion of bravo-child included (a trial reopened its stream
	// with since= and received every hidden object updated or deleted meanwhile, names,
	// owners and finalizers, as the removals a resume sends for what the client may hold).
	var before struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(alice.first, &before); err != nil || before.Seq == 0 {
		t.Fatalf("alice's first snapshot: %v, seq %d", err, before.Seq)
	}
	for _, since := range []uint64{0, before.Seq} {
		for _, user := range []string{"alice", "nobody"} {
			// What the resumed stream sends until it has told the client of everything
			// published so far.
			target := e.engine.Feed().LastSeq()
			s := dialQuery(user, fmt.Sprintf("?since=%d", since))
			var got strings.Builder
			for reached := false; !reached; {
				select {
				case data, ok := <-s.frames:
					if !ok {
						t.Fatalf("%s's stream resumed at %d closed", user, since)
					}
					got.Write(data)
					got.WriteByte('\n')
					var f struct {
						Seq uint64 `json:"seq"`
					}
					json.Unmarshal(data, &f)
					reached = f.Seq >= target
				case <-time.After(time.Minute):
					t.Fatalf("%s's stream resumed at %d never reached seq %d: %.300s", user, since, target, got.String())
				}
			}
			for _, f := range []string{"bravo-", w.nsB} {
				if strings.Contains(got.String(), f) {
					i := strings.Index(got.String(), f)
					t.Errorf("%s's stream resumed at %d names %q: …%s…", user, since, f, got.String()[max(0, i-200):min(got.Len(), i+100)])
				}
			}
			if user == "alice" && !strings.Contains(got.String(), `"alpha-late"`) {
				t.Errorf("alice's stream resumed at %d does not hold alpha-late: %.300s", since, got.String())
			}
			s.conn.CloseNow()
		}
	}

	// The user with no RBAC gets snapshots and sequence numbers, and no object at all:
	// its frames up to one that tells it the seq of everything above name nothing.
	target := e.engine.Feed().LastSeq()
	for reached := false; !reached; {
		select {
		case f, ok := <-nobody.frames:
			if !ok {
				t.Fatal("the stream of the user with no RBAC closed")
			}
			var frame streamtest.Frame
			json.Unmarshal(f, &frame)
			if len(frame.Nodes) > 0 || slicesContainNodeEvent(frame.Events) {
				t.Errorf("the user with no RBAC received objects: %.300s", f)
			}
			reached = frame.Seq >= target
		case <-time.After(time.Minute):
			t.Fatalf("the stream of the user with no RBAC never reached seq %d", target)
		}
	}
	for drained := false; !drained; {
		select {
		case f := <-nobody.frames:
			var frame streamtest.Frame
			json.Unmarshal(f, &frame)
			if len(frame.Nodes) > 0 || slicesContainNodeEvent(frame.Events) {
				t.Errorf("the user with no RBAC received objects: %.300s", f)
			}
		default:
			drained = true
		}
	}
}

func slicesContainNodeEvent(events []gc.Event) bool {
	for _, e := range events {
		if e.Node != nil || e.Edge != nil || e.Queue != nil || e.Action != nil || e.Shadow != nil {
			return true
		}
	}
	return false
}

// TestSlowMotionNeedsRBAC: with --auth=kubernetes, slow motion (one engine, every user's)
// is switched only by users the cluster's RBAC allows to post its non-resource URL; a
// trial found any authenticated user could slow the collector down for the whole cluster.
func TestSlowMotionNeedsRBAC(t *testing.T) {
	w := newRBACWorld(t)
	slow, err := gc.NewForConfig(w.e.config, gc.Options{ActionDelay: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	audit := &lockedBuffer{}
	ts := httptest.NewServer(New(Options{Engine: slow, Kube: w.e.config, Audit: audit,
		Auth:       security.NewTokenReviewer(w.e.client.AuthenticationV1().TokenReviews()),
		Authorizer: security.NewAccessReviewer(w.e.client.AuthorizationV1().SubjectAccessReviews()),
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(ts.Close)
	ctx := context.Background()
	cr, err := w.e.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "gcscope-slow-motion-"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{demo.SlowMotionPath}, Verbs: []string{"post"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.e.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: w.nsA, Name: "carol"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.e.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
		w.e.client.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
	})
	c := newClient(t, ts)
	post := func(user, body string) (int, string) {
		h := http.Header{"Authorization": {"Bearer " + w.tokens[user]}}
		s := c.sessionAs(h)
		h.Set("Origin", ts.URL)
		h.Set(edge.CSRFHeader, s.CSRFToken)
		code, out := c.do(http.MethodPost, "/api/v1/slow-motion", body, h)
		return code, string(out)
	}
	for _, user := range []string{"alice", "nobody"} {
		if code, body := post(user, `{"enabled":false}`); code != http.StatusForbidden || !strings.Contains(body, demo.SlowMotionPath) || !slow.SlowMotion() {
			t.Errorf("%s switches slow motion off: %d %s (engine: %v); want 403 naming the permission, and the engine unchanged", user, code, body, slow.SlowMotion())
		}
	}
	if !strings.Contains(audit.String(), `"action":"slowMotion"`) || !strings.Contains(audit.String(), `"status":403`) {
		t.Errorf("the refusals are not audited: %s", audit.String())
	}
	if code, body := post("carol", `{"enabled":false}`); code != http.StatusOK || slow.SlowMotion() {
		t.Errorf("carol, granted it, switches slow motion off: %d %s (engine: %v)", code, body, slow.SlowMotion())
	}
}

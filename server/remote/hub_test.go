package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/registry"
)

// twoRemotes starts a gcscope on each control plane (a knows alice and bob, b alice only)
// and a hub over both.
func twoRemotes(t *testing.T) (a, b *clusterEnv, ga, gb *gcscope, h *hub) {
	a, b = cluster(t, "a"), cluster(t, "b")
	ga = remoteGcscope(t, a, "a", aliceToken+" alice", bobToken+" bob")
	gb = remoteGcscope(t, b, "b", aliceToken+" alice")
	h = newHub(t, map[string]*gcscope{"a": ga, "b": gb}, "a", "b")
	return
}

type clusterList struct {
	Clusters []registry.Status `json:"clusters"`
}

func stateOf(list clusterList, name string) registry.Status {
	for _, st := range list.Clusters {
		if st.Name == name {
			return st
		}
	}
	return registry.Status{}
}

// TestHubListsRemotesWithTheirState: the picker lists both remotes, ready, for alice;
// for bob, b (which does not know him) is refused with its reason, a ready.
func TestHubListsRemotesWithTheirState(t *testing.T) {
	_, _, ga, gb, h := twoRemotes(t)
	alice, bob := h.as(aliceToken), h.as(bobToken)
	var list clusterList
	testkit.Eventually(t, "both remotes listed ready for alice", func() bool {
		list = clusterList{}
		alice.getJSON("/api/v1/clusters", &list)
		return stateOf(list, "a").State == registry.Ready && stateOf(list, "b").State == registry.Ready
	})
	if names := []string{list.Clusters[0].Name, list.Clusters[1].Name}; !slices.Equal(names, []string{"a", "b"}) || !list.Clusters[0].Default {
		t.Errorf("listed %v (a default: %v), want a (the default) then b", names, list.Clusters[0].Default)
	}
	if stateOf(list, "a").Server != ga.URL || stateOf(list, "b").Server != gb.URL {
		t.Errorf("servers %q, %q; want the remotes' URLs", stateOf(list, "a").Server, stateOf(list, "b").Server)
	}
	list = clusterList{}
	bob.getJSON("/api/v1/clusters", &list)
	if st := stateOf(list, "b"); st.State != registry.Refused || !strings.Contains(st.Reason, "does not accept your credential") {
		t.Errorf("b for bob: %+v, want refused with the remote's reason", st)
	}
	if st := stateOf(list, "a"); st.State != registry.Ready {
		t.Errorf("a for bob: %+v, want ready", st)
	}
	// The page's first paint draws the picker as bob sees it, before its first poll.
	if code, _, page := bob.do(http.MethodGet, "/?cluster=a", nil, nil); code != http.StatusOK || !regexp.MustCompile(`<option value="b"[^>]*data-state="refused"`).Match(page) {
		t.Errorf("bob's page: %d; want b's option drawn refused:\n%s", code, page)
	}
	// And b's routes refuse bob as b does, not as a 401 that would sign him out of the hub.
	if code, _, body := bob.do(http.MethodGet, "/api/v1/clusters/b/graph", nil, nil); code != http.StatusForbidden {
		t.Errorf("bob's read of b: %d %s, want 403", code, body)
	}
}

// TestHubReadsEachRemote: the hub's reads of a return a's objects and of b b's; /session
// carries the hub's CSRF token, and no cookie of the remote's reaches the browser.
func TestHubReadsEachRemote(t *testing.T) {
	a, b, _, _, h := twoRemotes(t)
	alice := h.as(aliceToken)
	nsA, nsB := namespace(t, a), namespace(t, b)
	cmA := configMap(t, a, nsA, "in-a")
	cmB := configMap(t, b, nsB, "in-b")
	uids := func(cluster string, ns string) []types.UID {
		var g struct {
			Nodes []gc.NodeState `json:"nodes"`
		}
		if code := alice.getJSON("/api/v1/clusters/"+cluster+"/graph?namespace="+ns, &g); code != http.StatusOK {
			t.Fatalf("graph of %s: %d", cluster, code)
		}
		var out []types.UID
		for _, n := range g.Nodes {
			out = append(out, n.UID)
		}
		return out
	}
	if got := uids("a", nsA); !slices.Contains(got, cmA.UID) {
		t.Errorf("a's graph in %s: %v, want %s", nsA, got, cmA.UID)
	}
	if got := uids("b", nsB); !slices.Contains(got, cmB.UID) {
		t.Errorf("b's graph in %s: %v, want %s", nsB, got, cmB.UID)
	}
	if got := uids("a", nsB); len(got) != 0 {
		t.Errorf("a's graph in b's namespace %s: %v, want nothing", nsB, got)
	}
	// The default cluster's routes (/api/v1/...) are a's: the first remote.
	var obj gc.NodeDetail
	if code := alice.getJSON("/api/v1/objects/"+string(cmA.UID), &obj); code != http.StatusOK || obj.UID != cmA.UID {
		t.Errorf("a's object through the default routes: %d %+v", code, obj.ObjectRef)
	}
	code, hdr, body := alice.do(http.MethodGet, "/api/v1/clusters/b/session", nil, nil)
	if code != http.StatusOK {
		t.Fatalf("b's session: %d %s", code, body)
	}
	var sess struct {
		CSRFToken string `json:"csrfToken"`
		Remote    bool   `json:"remote"`
		User      struct{ Name string }
	}
	json.Unmarshal(body, &sess)
	var hubs struct {
		CSRFToken string `json:"csrfToken"`
	}
	alice.getJSON("/api/v1/clusters/a/session", &hubs)
	if sess.CSRFToken == "" || sess.CSRFToken != hubs.CSRFToken || !sess.Remote || sess.User.Name != "alice" {
		t.Errorf("b's session through the hub: %s; want the hub's CSRF token (as for a), remote, user alice", body)
	}
	for _, c := range hdr.Values("Set-Cookie") {
		if !strings.HasPrefix(c, "gcscope_csrf=") || len(hdr.Values("Set-Cookie")) > 1 {
			t.Errorf("cookies through the hub: %q; want the hub's CSRF cookie only", hdr.Values("Set-Cookie"))
		}
	}
}

// TestHubStreamsSnapshotThenDeltas: the stream of b through the hub gives b's snapshot,
// then the creation and deletion of an object live.
func TestHubStreamsSnapshotThenDeltas(t *testing.T) {
	_, b, _, _, h := twoRemotes(t)
	ns := namespace(t, b)
	before := configMap(t, b, ns, "before")
	c := h.as(aliceToken).stream("/api/v1/clusters/b/stream?namespace=" + ns)
	f, err := readFrame(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != "snapshot" || !slices.ContainsFunc(f.Nodes, func(n gc.NodeState) bool { return n.UID == before.UID }) {
		t.Fatalf("first frame: %s with %d nodes; want b's snapshot holding %s", f.Type, len(f.Nodes), before.UID)
	}
	after := configMap(t, b, ns, "after")
	if err := b.Client.CoreV1().ConfigMaps(ns).Delete(context.Background(), after.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	added, removed := false, false
	for !(added && removed) {
		f, err := readFrame(t, c)
		if err != nil {
			t.Fatalf("stream ended before the deltas (added %v, removed %v): %v", added, removed, err)
		}
		for _, e := range f.Events {
			if e.Node != nil && e.Node.UID == after.UID {
				added = added || e.Type == gc.NodeAdded
				removed = removed || (e.Type == gc.NodeRemoved && added)
			}
		}
	}
}

// TestHubDeletesAsTheUser: a delete through the hub reaches a as alice (a's audit names
// her) and the hub's audit line names her and the cluster; a write without the hub's CSRF
// token stops at the hub and never reaches a.
func TestHubDeletesAsTheUser(t *testing.T) {
	a, _, ga, _, h := twoRemotes(t)
	alice := h.as(aliceToken)
	ns := namespace(t, a)
	cm := configMap(t, a, ns, "doomed")
	path := "/api/v1/clusters/a/objects/" + string(cm.UID) + "/delete"
	body := map[string]any{"propagationPolicy": "Background", "dryRun": false}

	if code, _, out := alice.do(http.MethodPost, path, body, http.Header{"Content-Type": {"application/json"}}); code != http.StatusForbidden {
		t.Fatalf("a write without the hub's CSRF token: %d %s, want 403", code, out)
	}
	if strings.Contains(ga.Audit.String(), string(cm.UID)) {
		t.Fatalf("a write refused at the hub reached a: %s", ga.Audit.String())
	}

	var sess struct {
		CSRFToken string `json:"csrfToken"`
	}
	alice.getJSON("/api/v1/clusters/a/session", &sess)
	code, _, out := alice.do(http.MethodPost, path, body, http.Header{"Content-Type": {"application/json"},
		"Origin": {h.URL}, "X-CSRF-Token": {sess.CSRFToken}})
	if code != http.StatusOK {
		t.Fatalf("delete through the hub: %d %s", code, out)
	}
	testkit.Eventually(t, "the object to be gone from a", func() bool {
		_, err := a.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), cm.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	remoteLine := auditLine(t, ga.Audit.String(), "delete", string(cm.UID))
	if remoteLine["user"] != "alice" || remoteLine["result"] != "ok" {
		t.Errorf("a's audit line: %v, want alice, ok", remoteLine)
	}
	// The hub writes its line before it passes the remote's answer on: it is there once
	// the client has the answer.
	hubLine := auditLine(t, h.Audit.String(), "delete", string(cm.UID))
	if hubLine["user"] != "alice" || hubLine["cluster"] != "a" || hubLine["result"] != "ok" || hubLine["policy"] != "Background" {
		t.Errorf("the hub's audit line: %v, want alice, cluster a, ok, Background", hubLine)
	}
}

// auditLine is the audit log's last line of action whose text holds what.
func auditLine(t *testing.T, log, action, what string) map[string]any {
	t.Helper()
	lines := strings.Split(log, "\n")
	for _, l := range slices.Backward(lines) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["action"] == action && strings.Contains(l, what) {
			return m
		}
	}
	t.Fatalf("no %s line about %s in the audit log:\n%s", action, what, log)
	return nil
}

// TestHubReportsARemoteDownAndBack: a remote taken down mid-stream (its connections cut)
// closes the stream through the hub with a reason naming it, is listed failed while the
// other stays ready and readable, and is ready again once it is back.
func TestHubReportsARemoteDownAndBack(t *testing.T) {
	a, b := cluster(t, "a"), cluster(t, "b")
	ga := remoteGcscope(t, a, "a", aliceToken+" alice")
	gb := remoteGcscope(t, b, "b", aliceToken+" alice")
	h := newHub(t, map[string]*gcscope{"a": ga, "b": gb}, "a", "b")
	alice := h.as(aliceToken)
	list := func() clusterList {
		var l clusterList
		alice.getJSON("/api/v1/clusters", &l)
		return l
	}
	testkit.Eventually(t, "both remotes ready", func() bool {
		l := list()
		return stateOf(l, "a").State == registry.Ready && stateOf(l, "b").State == registry.Ready
	})
	c := alice.stream("/api/v1/clusters/b/stream?namespace=kube-system")
	if f, err := readFrame(t, c); err != nil || f.Type != "snapshot" {
		t.Fatalf("first frame: %+v %v", f.Type, err)
	}

	gb.down()
	var err error
	for err == nil {
		_, err = readFrame(t, c)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater || !strings.Contains(ce.Reason, `"b"`) {
		t.Errorf("the stream ended with %v; want a close (try again later) naming cluster b", err)
	}
	testkit.Eventually(t, "b listed failed, a ready", func() bool {
		l := list()
		return stateOf(l, "b").State == registry.Failed && stateOf(l, "b").Reason != "" && stateOf(l, "a").State == registry.Ready
	})
	if code, _, body := alice.do(http.MethodGet, "/api/v1/clusters/a/summary", nil, nil); code != http.StatusOK {
		t.Errorf("a's summary while b is down: %d %s", code, body)
	}
	if code, _, body := alice.do(http.MethodGet, "/api/v1/clusters/b/summary", nil, nil); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "cluster_not_ready") {
		t.Errorf("b's summary while it is down: %d %s, want 503 cluster_not_ready", code, body)
	}

	gb.up()
	testkit.Eventually(t, "b ready again", func() bool { return stateOf(list(), "b").State == registry.Ready })
	c = alice.stream("/api/v1/clusters/b/stream?namespace=kube-system")
	if f, err := readFrame(t, c); err != nil || f.Type != "snapshot" {
		t.Fatalf("first frame once b is back: %+v %v", f.Type, err)
	}
}

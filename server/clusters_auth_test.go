package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/security"
	"github.com/gcscope/gcscope/server/stream"
)

// clusterReview is a cluster's own review of credentials: it accepts token as name
// until revoked.
type clusterReview struct {
	token, name string
	revoked     atomic.Bool
}

func (c *clusterReview) Authenticate(_ context.Context, token string) (*security.User, error) {
	if token != c.token || c.revoked.Load() {
		return nil, security.ErrUnauthenticated
	}
	return &security.User{Name: c.name, Impersonate: true}, nil
}

// TestEachClusterDecidesWhoTheUserIs: three clusters that review credentials themselves
// (several contexts under --auth=kubernetes). East knows the user's token as alice@east,
// west as alice@west, north not at all. The token signs in at the door (one accepts it);
// each cluster serves the user under its own name for them; north is listed refused and
// answers 403 saying why, a write to it audited as denied with its name; and when west
// stops accepting the token, west's open stream ends while east's goes on.
func TestEachClusterDecidesWhoTheUserIs(t *testing.T) {
	e := env(t)
	const token = "user-token-0123456789"
	east, west, north := &clusterReview{token: token, name: "alice@east"}, &clusterReview{token: token, name: "alice@west"}, &clusterReview{}
	set := &clusterSet{status: []registry.Status{
		{Name: "east", State: registry.Ready, Default: true}, {Name: "west", State: registry.Ready}, {Name: "north", State: registry.Ready},
	}, open: map[string]*registry.Cluster{
		"east":  {Engine: e.engine, Kube: e.config, Authenticator: east},
		"west":  {Engine: e.engine, Kube: e.config, Authenticator: west},
		"north": {Engine: e.engine, Kube: e.config, Authenticator: north},
	}}
	audit := &lockedBuffer{}
	s := New(Options{Clusters: set, Auth: security.AnyOf{east, west, north}, Audit: audit,
		StreamCredentialsInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { cancel(); ts.Close() })
	c := newClient(t, ts)
	as := http.Header{"Authorization": {"Bearer " + token}}

	code, body := c.do(http.MethodGet, "/api/v1/clusters", nil, as)
	var list clustersResponse
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil {
		t.Fatalf("GET /api/v1/clusters: %d %s", code, body)
	}
	for _, st := range list.Clusters {
		if want := map[bool]registry.State{true: registry.Refused, false: registry.Ready}[st.Name == "north"]; st.State != want {
			t.Errorf("%s is listed %s (%s), want %s", st.Name, st.State, st.Reason, want)
		}
		if st.Name == "north" && !strings.Contains(st.Reason, `cluster "north" does not accept your credential`) {
			t.Errorf("north is refused for %q", st.Reason)
		}
	}
	for cluster, want := range map[string]string{"east": "alice@east", "west": "alice@west"} {
		var who struct{ User security.User }
		code, body := c.do(http.MethodGet, "/api/v1/clusters/"+cluster+"/session", nil, as)
		if json.Unmarshal(body, &who); code != http.StatusOK || who.User.Name != want {
			t.Errorf("%s's session: %d %s; want the user %s", cluster, code, body, want)
		}
	}
	if code, body := c.do(http.MethodGet, "/api/v1/clusters/north/queues", nil, as); code != http.StatusForbidden || !strings.Contains(string(body), "does not accept your credential") {
		t.Errorf("north's queues: %d %s; want 403 saying north does not accept the credential", code, body)
	}
	write := http.Header{"Authorization": as["Authorization"], "Content-Type": {"application/json"}}
	if code, _ := c.do(http.MethodPost, "/api/v1/clusters/north/slow-motion", `{"enabled":true}`, write); code != http.StatusForbidden {
		t.Errorf("a write to north: %d, want 403", code)
	}
	if !strings.Contains(audit.String(), `"cluster":"north"`) || !strings.Contains(audit.String(), `"result":"denied"`) {
		t.Errorf("the refused write to north is not audited with its cluster:\n%s", audit.String())
	}
	if e.engine.SlowMotion() {
		t.Error("the write refused by north switched slow motion on")
	}

	// Each stream is re-checked by its own cluster.
	dial := func(cluster string) *websocket.Conn {
		dctx, done := context.WithTimeout(ctx, 30*time.Second)
		defer done()
		conn, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/api/v1/clusters/"+cluster+"/stream",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": as["Authorization"], "Origin": {ts.URL}}})
		if err != nil {
			t.Fatalf("the stream of %s: %v", cluster, err)
		}
		conn.SetReadLimit(-1)
		if _, _, err := conn.Read(dctx); err != nil {
			t.Fatalf("the stream of %s: %v, want its first frame", cluster, err)
		}
		return conn
	}
	eastStream, westStream := dial("east"), dial("west")
	defer eastStream.CloseNow()
	defer westStream.CloseNow()
	west.revoked.Store(true)
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := westStream.Read(ctx); err != nil {
				closed <- err
				return
			}
		}
	}()
	var ce websocket.CloseError
	select {
	case err := <-closed:
		if !errors.As(err, &ce) || ce.Code != stream.StatusSignedOut {
			t.Errorf("west's stream once west no longer accepts the user: %v; want closed with %d", err, stream.StatusSignedOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("west's stream is still open 30 s after west stopped accepting the user")
	}
	// East's is re-checked too (every 20 ms), and goes on: it delivers what comes next.
	cm := e.configMap(t, e.namespace(t), "after-west-refused", nil)
	rctx, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()
	for {
		_, frame, err := eastStream.Read(rctx)
		if err != nil {
			t.Fatalf("east's stream after west's ended: %v; want the ConfigMap created since", err)
		}
		if strings.Contains(string(frame), string(cm.UID)) {
			break
		}
	}
}

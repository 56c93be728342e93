package remote_test

// BenchmarkHubFrame (beside internal/difftest's BenchmarkChurn, whose stream it follows
// through the hub instead of directly) measures what the hub adds to a frame: the same
// remote's stream is read directly and through the hub at once, and each created object's
// nodeAdded is timed on both; and what the hub allocates to relay a snapshot of a remote
// of 1k and of 20k objects (it must not grow with the remote's size).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/gcscope/gcscope/server/remote"
)

// arrivals records when each object's nodeAdded arrived on a stream.
type arrivals struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

func follow(c *websocket.Conn) *arrivals {
	a := &arrivals{at: map[types.UID]time.Time{}}
	go func() {
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			now := time.Now()
			var f frame
			if json.Unmarshal(data, &f) != nil {
				continue
			}
			a.mu.Lock()
			for _, e := range f.Events {
				if e.Type == gc.NodeAdded && e.Node != nil {
					a.at[e.Node.UID] = now
				}
			}
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *arrivals) get(uid types.UID) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[uid]
	return t, ok
}

func BenchmarkHubFrame(b *testing.B) {
	a := cluster(b, "a")
	ga := remoteGcscope(b, a, "a", aliceToken+" alice")
	h := newHub(b, map[string]*gcscope{"a": ga}, "a")
	ns := namespace(b, a)
	direct := (&user{t: b, base: ga.URL, token: aliceToken, http: http.DefaultClient}).stream("/api/v1/stream?namespace=" + ns)
	hubbed := h.as(aliceToken).stream("/api/v1/clusters/a/stream?namespace=" + ns)
	dA, hA := follow(direct), follow(hubbed)

	const objects = 200
	var added, directLat, hubLat []time.Duration
	for b.Loop() {
		added, directLat, hubLat = nil, nil, nil
		for i := range objects {
			start := time.Now()
			cm := configMap(b, a, ns, fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i))
			var td, th time.Time
			// Each arrival is stamped by its reader: the wait's pace does not enter the times.
			testkit.EventuallyEvery(b, time.Millisecond, "both streams to show "+cm.Name, func() bool {
				var okD, okH bool
				td, okD = dA.get(cm.UID)
				th, okH = hA.get(cm.UID)
				return okD && okH
			})
			added = append(added, th.Sub(td))
			directLat, hubLat = append(directLat, td.Sub(start)), append(hubLat, th.Sub(start))
			a.Client.CoreV1().ConfigMaps(ns).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
		}
	}
	slices.Sort(added)
	p := func(d []time.Duration, q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	mean := func(d []time.Duration) time.Duration {
		var s time.Duration
		for _, x := range d {
			s += x
		}
		return s / time.Duration(len(d))
	}
	ratio := float64(mean(hubLat)) / float64(mean(directLat))
	b.ReportMetric(float64(p(added, 0.99).Microseconds())/1000, "p99-added-ms")
	b.ReportMetric(ratio, "hub/direct")
	b.Logf("frame latency from create to nodeAdded, %d objects: direct mean %v, through the hub mean %v (ratio %.2f); added p50 %v, p99 %v, max %v (target p99 ≤ 50 ms)",
		objects, mean(directLat), mean(hubLat), ratio, p(added, 0.5), p(added, 0.99), added[len(added)-1])

	// Memory: a snapshot of 1k and of 20k objects relayed through the hub.
	for _, n := range []int{1000, 20000} {
		alloc, size := relayedSnapshotAlloc(b, n)
		b.Logf("relaying a snapshot of %d objects (%d KiB): %d KiB allocated in the process", n, size>>10, alloc>>10)
	}
}

// relayedSnapshotAlloc relays one snapshot frame of n objects from a stand-in remote (a
// websocket that sends the frame, made before the count starts) through a Remote to a
// client that discards it, and returns the bytes allocated meanwhile and the frame's size.
func relayedSnapshotAlloc(b *testing.B, n int) (uint64, int) {
	nodes := make([]gc.NodeState, n)
	for i := range nodes {
		nodes[i] = gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench", Name: fmt.Sprintf("object-%06d", i), UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))}}
	}
	snap, _ := json.Marshal(map[string]any{"type": "snapshot", "seq": 1, "nodes": nodes})
	standIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.Write(r.Context(), websocket.MessageText, snap)
		c.Close(websocket.StatusNormalClosure, "")
	}))
	defer standIn.Close()
	set, err := remote.NewSet([]remote.Config{{Name: "s", URL: standIn.URL}}, remote.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rm, _ := set.Lookup("s")
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rm.Serve(w, r, remote.Call{Path: strings.TrimPrefix(r.URL.Path, "/api/v1")})
	}))
	defer hub.Close()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, _, err := websocket.Dial(context.Background(), hub.URL+"/api/v1/stream", nil)
	if err != nil {
		b.Fatal(err)
	}
	c.SetReadLimit(-1)
	_, rd, err := c.Reader(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, rd)
	c.CloseNow()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, len(snap)
}

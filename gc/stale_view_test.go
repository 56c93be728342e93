package gc_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// watchGate holds back the engine's ConfigMap watch streams while held: its graph's view
// of every ConfigMap goes stale, as behind a slow informer. It also counts the DELETEs the
// apiserver refused with 409.
type watchGate struct {
	mu        sync.Mutex
	open      *sync.Cond
	held      bool
	conflicts atomic.Int64
}

// heldWatches is one client's transport through the gate.
type heldWatches struct {
	next http.RoundTripper
	*watchGate
}

func (h *heldWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if req.Method == http.MethodDelete && resp.StatusCode == http.StatusConflict {
		h.conflicts.Add(1)
	}
	if req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, "/configmaps") {
		resp.Body = &heldBody{ReadCloser: resp.Body, h: h.watchGate}
	}
	return resp, nil
}

func (h *watchGate) hold(on bool) {
	h.mu.Lock()
	h.held = on
	h.mu.Unlock()
	h.open.Broadcast()
}

type heldBody struct {
	io.ReadCloser
	h *watchGate
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.h.mu.Lock()
	for b.h.held {
		b.h.open.Wait()
	}
	b.h.mu.Unlock()
	return b.ReadCloser.Read(p)
}

// TestStaleViewNeverDeletesAnObjectThatGainedAnOwner: the engine decides from its graph,
// so it must never delete on a stale view. Its ConfigMap watch is held back; meanwhile
// each dependent ConfigMap gains a second, live owner, and its first owner (a Secret,
// whose watch flows) is deleted. The engine, seeing only the old ownerReferences, tries
// to delete: the resourceVersion precondition refuses (409). Once the watch flows again,
// every dependent stays, naming only its live owner.
func TestStaleViewNeverDeletesAnObjectThatGainedAnOwner(t *testing.T) {
	const dependents = 20
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := ownControlPlane(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	gate := &watchGate{}
	gate.open = sync.NewCond(&gate.mu)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &heldWatches{next: rt, watchGate: gate} }
	engine := runEngine(t, ctx, cfg, gc.Options{DiscoveryPeriod: time.Hour})
	t.Cleanup(func() { gate.hold(false) }) // before the engine stops: a held read would block it
	<-engine.Synced()

	ns := "default"
	secrets, cms := client.CoreV1().Secrets(ns), client.CoreV1().ConfigMaps(ns)
	first, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "first"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "second"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refTo := func(s *corev1.Secret) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: s.Name, UID: s.UID}
	}
	var deps []*corev1.ConfigMap
	for i := range dependents {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dep-%02d", i),
			OwnerReferences: []metav1.OwnerReference{refTo(first)}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deps = append(deps, cm)
	}
	testkit.Eventually(t, "the engine observes every dependent", func() bool {
		for _, cm := range deps {
			if n, ok := engine.Node(cm.UID); !ok || !n.Observed {
				return false
			}
		}
		return true
	})

	gate.hold(true)
	for _, cm := range deps {
		cm.OwnerReferences = append(cm.OwnerReferences, refTo(second))
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := secrets.Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the engine to try a delete on its stale view and meet a 409", func() bool { return gate.conflicts.Load() > 0 })
	alive := func() error {
		for _, cm := range deps {
			got, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
			if err != nil || got.UID != cm.UID || got.DeletionTimestamp != nil {
				return fmt.Errorf("%s was deleted (err %v)", cm.Name, err)
			}
		}
		return nil
	}
	testkit.Consistently(t, "every dependent stays while the watch is held", 3*time.Second, func() bool {
		if err := alive(); err != nil {
			t.Fatalf("while the watch is held: %v", err)
		}
		return true
	})

	gate.hold(false)
	testkit.Eventually(t, "every dependent to name only its live owner", func() bool {
		for _, cm := range deps {
			got, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
			if err != nil || len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != second.UID {
				return false
			}
		}
		return true
	})
	if err := alive(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d deletes refused with 409 on the stale view, 0 dependents deleted", gate.conflicts.Load())
}

package deletion

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
)

func TestOwnerOfFinalizerReadsManagedFields(t *testing.T) {
	at := func(s int) *metav1.Time { t := metav1.NewTime(time.Unix(int64(s), 0)); return &t }
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(1),
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:a":{}}}`)}},
		{Manager: "acme-controller", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(2),
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:finalizers":{".":{},"v:\"acme.example.com/hold\"":{}}}}`)}},
		{Manager: "other", Operation: metav1.ManagedFieldsOperationApply, Time: at(3),
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:finalizers":{"v:\"other.example.com/x\"":{}}}}`)}},
		{Manager: "broken", FieldsV1: &metav1.FieldsV1{Raw: []byte(`not json`)}},
	}
	for _, tc := range []struct{ finalizer, manager string }{
		{"acme.example.com/hold", "acme-controller"},
		{"other.example.com/x", "other"},
		{"nobody.example.com/y", ""},
		{`quote"d`, ""},
	} {
		e, ok := ownerOfFinalizer(entries, tc.finalizer)
		if ok != (tc.manager != "") || e.Manager != tc.manager {
			t.Errorf("%s: %q %v, want %q", tc.finalizer, e.Manager, ok, tc.manager)
		}
	}
	// Two managers own it (both applied it): the latest.
	both := append(slices.Clone(entries), metav1.ManagedFieldsEntry{Manager: "later", Time: at(9),
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:finalizers":{"v:\"acme.example.com/hold\"":{}}}}`)}})
	if e, _ := ownerOfFinalizer(both, "acme.example.com/hold"); e.Manager != "later" {
		t.Errorf("co-owned finalizer: %q, want the latest entry's manager", e.Manager)
	}
}

func TestTokensNameTheController(t *testing.T) {
	for _, tc := range []struct {
		manager, finalizer string
		want               []string
	}{
		{"acme-controller", "acme.example.com/hold", []string{"acme", "acme-controller"}},
		{"kubectl-patch", "acme.example.com/hold", []string{"acme"}},
		{"", "cert-manager.io/cleanup", []string{"cert-manager"}},
		{"kubectl", "no-domain", nil},
		{"io", "k8s.io/x", nil},
	} {
		if got := tokensOf(tc.manager, tc.finalizer); !slices.Equal(got, tc.want) {
			t.Errorf("tokensOf(%q, %q) = %q, want %q", tc.manager, tc.finalizer, got, tc.want)
		}
	}
	for f, want := range map[string]bool{"kubernetes": true, "kubernetes.io/pvc-protection": true, "batch.kubernetes.io/job-tracking": true, "acme.example.com/x": false, "foo": false} {
		if builtIn(f) != want {
			t.Errorf("builtIn(%q) = %v", f, !want)
		}
	}
}

func TestLeaseFreshness(t *testing.T) {
	now := time.Unix(1000, 0)
	renewed := func(ago time.Duration) *time.Time { m := now.Add(-ago); return &m }
	d := 15 * time.Second
	for _, tc := range []struct {
		renew *time.Time
		fresh bool
	}{{renewed(10 * time.Second), true}, {renewed(30 * time.Second), true}, {renewed(31 * time.Second), false}, {nil, false}} {
		if got, detail := leaseFresh(tc.renew, d, now); got != tc.fresh {
			t.Errorf("lease renewed %v: fresh %v (%s), want %v", tc.renew, got, detail, tc.fresh)
		}
	}
}

// fakeGraph is a Graph of fixed objects.
type fakeGraph struct {
	objects []gc.NodeState
	sync    gc.SyncState
}

func (f *fakeGraph) Node(uid types.UID) (gc.NodeDetail, bool) {
	for _, o := range f.objects {
		if o.UID == uid {
			return gc.NodeDetail{NodeState: o}, true
		}
	}
	return gc.NodeDetail{}, false
}

func (f *fakeGraph) InNamespace(ns string) []gc.NodeState {
	var out []gc.NodeState
	for _, o := range f.objects {
		if o.Namespace == ns {
			out = append(out, o)
		}
	}
	return out
}

func (f *fakeGraph) BeingDeleted() []gc.NodeState {
	var out []gc.NodeState
	for _, o := range f.objects {
		if o.BeingDeleted {
			out = append(out, o)
		}
	}
	return out
}

func (f *fakeGraph) PredictDelete(types.UID, metav1.DeletionPropagation) (gc.Prediction, bool) {
	return gc.Prediction{}, false
}
func (f *fakeGraph) SyncState() gc.SyncState { return f.sync }

func deleting(kind, ns, name string, ago time.Duration, finalizers ...string) gc.NodeState {
	t := time.Now().Add(-ago)
	api := "v1"
	if kind == "Deployment" {
		api = "apps/v1"
	}
	return gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: api, Kind: kind, Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)},
		Finalizers: finalizers, DeletionTimestamp: &t, BeingDeleted: true, Observed: true}
}

func TestClassifyAndCountStuck(t *testing.T) {
	fg := deleting("Deployment", "a", "fg", time.Hour, "foregroundDeletion")
	fg.DeletingDependents = true
	g := &fakeGraph{objects: []gc.NodeState{
		deleting("ConfigMap", "a", "held", time.Hour, "acme.example.com/hold"),
		deleting("ConfigMap", "a", "held2", time.Hour, "foregroundDeletion", "acme.example.com/hold"),
		fg,
		deleting("Deployment", "a", "orphaning", time.Hour, "orphan"),
		deleting("Pod", "a", "pod", time.Hour),
		deleting("Namespace", "", "ns", time.Hour),
		deleting("ConfigMap", "a", "young", time.Minute, "acme.example.com/hold"),
		deleting("ConfigMap", "a", "odd", time.Hour),
	}}
	c := NewStuckCollector(g, 5*time.Minute)
	got := map[string]int{}
	for _, s := range c.counts() {
		got[s.cause+"/"+s.finalizer] = s.n
	}
	want := map[string]int{"finalizer/acme.example.com/hold": 2, "foreground/": 1, "orphan/": 1, "termination/": 1, "namespace/": 1, "unknown/": 1, "discovery/": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts = %v, want %v", got, want)
	}
	// While discovery fails, a stuck namespace is counted under discovery.
	g.sync.DiscoveryFailures = map[string]gc.GroupFailure{"x.example.com/v1": {Error: "stale"}}
	for _, s := range c.counts() {
		if s.cause == CauseNamespace && s.n != 0 || s.cause == CauseDiscovery && s.n != 1 {
			t.Errorf("while discovery fails: %s counts %d; want the namespace under discovery", s.cause, s.n)
		}
	}
}

func TestFinalizerLabelsAreBounded(t *testing.T) {
	g := &fakeGraph{}
	for i := range maxFinalizerLabels + 5 {
		for range i + 1 { // finalizer i holds i+1 objects: the 5 rarest become "other"
			g.objects = append(g.objects, deleting("ConfigMap", "a", fmt.Sprintf("c%d-%d", i, len(g.objects)), time.Hour, fmt.Sprintf("f%02d.example.com/x", i)))
		}
	}
	var counts []stuckCount
	for _, s := range NewStuckCollector(g, 0).counts() {
		if s.cause == CauseFinalizer {
			counts = append(counts, s)
		}
	}
	if len(counts) != maxFinalizerLabels+1 {
		t.Fatalf("%d series, want %d named and other", len(counts), maxFinalizerLabels)
	}
	last := counts[len(counts)-1]
	if last.finalizer != "other" || last.n != 1+2+3+4+5 {
		t.Errorf("other = %+v, want the 5 rarest finalizers' 15 objects", last)
	}
}

func TestNamespaceNarration(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	base := NamespaceReport{Name: "x", Phase: "Terminating", DeletionTimestamp: &since, Finalizers: []string{"kubernetes"}}
	for _, tc := range []struct {
		name string
		edit func(r *NamespaceReport)
		want string
	}{
		{"not deleting", func(r *NamespaceReport) { r.DeletionTimestamp = nil }, "nothing: the namespace is not being deleted"},
		{"empty", func(*NamespaceReport) {}, "the namespace controller removes the kubernetes finalizer"},
		{"content", func(r *NamespaceReport) { r.Content.Total = 3 }, "the namespace controller deletes the 3 objects left"},
		{"held", func(r *NamespaceReport) {
			r.Content.Total = 2
			r.Content.Holders = []Holder{{Object: gc.ObjectRef{Kind: "ConfigMap", Namespace: "x", Name: "h"}, Finalizers: []string{"a.io/f"}, BeingDeleted: true}}
			r.Content.Origins = []FinalizerOrigin{{Finalizer: "a.io/f", Manager: "a-ctl"}}
		}, "finalizer a.io/f (added by a-ctl) must be removed from 1 object: ConfigMap x/h"},
		{"discovery", func(r *NamespaceReport) {
			r.Conditions = []Condition{{Type: "NamespaceDeletionDiscoveryFailure", Status: "True", Message: "stale"}}
			r.APIServices = []APIServiceReport{{Name: "v1.b.io", Problem: "its Service s/n does not exist", Next: "create Service s/n"}}
		}, "make v1.b.io available again: create Service s/n"},
		{"other spec finalizer", func(r *NamespaceReport) { r.Finalizers = []string{"acme.io/ns"} }, "the controller of finalizer acme.io/ns must remove it: the namespace is empty"},
	} {
		r := base
		tc.edit(&r)
		if next, words := r.narrate(); !strings.HasPrefix(next, tc.want) || words == nil {
			t.Errorf("%s: next = %q (words %v), want %q", tc.name, next, words, tc.want)
		}
	}
}

// TestDeletingObjectsAndTheOldest: gcscope_deleting_objects counts every object being
// deleted by cause, however young, and gcscope_deleting_oldest_seconds is the age of each
// cause's oldest; every cause has both series, 0 when nothing is being deleted for it.
func TestDeletingObjectsAndTheOldest(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(o gc.NodeState, ago time.Duration) gc.NodeState {
		ts := now.Add(-ago)
		o.DeletionTimestamp = &ts
		return o
	}
	g := &fakeGraph{objects: []gc.NodeState{
		at(deleting("ConfigMap", "a", "held", 0, "acme.example.com/hold"), 3*time.Hour),
		at(deleting("ConfigMap", "a", "held-young", 0, "acme.example.com/hold"), 10*time.Second),
		at(deleting("ConfigMap", "b", "other-hold", 0, "other.example.com/x"), 90*time.Minute),
		at(deleting("Pod", "a", "pod", 0), 20*time.Second),
		{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "no-timestamp"}, BeingDeleted: true},
	}}
	c := NewStuckCollector(g, 5*time.Minute)
	c.now = func() time.Time { return now }

	want := `
# HELP gcscope_deleting_objects Objects being deleted (deletionTimestamp set, still there), however recently, by the cause that holds them (as gcscope_stuck_objects).
# TYPE gcscope_deleting_objects gauge
gcscope_deleting_objects{cause="discovery"} 0
gcscope_deleting_objects{cause="finalizer"} 3
gcscope_deleting_objects{cause="foreground"} 0
gcscope_deleting_objects{cause="namespace"} 0
gcscope_deleting_objects{cause="orphan"} 0
gcscope_deleting_objects{cause="termination"} 1
gcscope_deleting_objects{cause="unknown"} 0
# HELP gcscope_deleting_oldest_seconds Seconds since the deletion of the oldest object still being deleted began (its deletionTimestamp), by the cause that holds it; 0 when none is.
# TYPE gcscope_deleting_oldest_seconds gauge
gcscope_deleting_oldest_seconds{cause="discovery"} 0
gcscope_deleting_oldest_seconds{cause="finalizer"} 10800
gcscope_deleting_oldest_seconds{cause="foreground"} 0
gcscope_deleting_oldest_seconds{cause="namespace"} 0
gcscope_deleting_oldest_seconds{cause="orphan"} 0
gcscope_deleting_oldest_seconds{cause="termination"} 20
gcscope_deleting_oldest_seconds{cause="unknown"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gcscope_deleting_objects", "gcscope_deleting_oldest_seconds"); err != nil {
		t.Error(err)
	}
	// The stuck gauge beside them still counts only the deletions past the threshold.
	got := map[string]int{}
	for _, s := range c.counts() {
		got[s.cause+"/"+s.finalizer] = s.n
	}
	if got["finalizer/acme.example.com/hold"] != 1 || got["finalizer/other.example.com/x"] != 1 || got["termination/"] != 0 {
		t.Errorf("stuck counts %v: want one per finalizer past 5m and no Pod", got)
	}

	// Nothing being deleted: every series is there, at 0.
	g.objects = nil
	if n := testutil.CollectAndCount(c, "gcscope_deleting_oldest_seconds"); n != len(causes) {
		t.Errorf("%d series of gcscope_deleting_oldest_seconds with nothing deleted, want %d (one per cause)", n, len(causes))
	}
}

// Any number of readers asking the same thing at once cost one look-up; an answer is
// reused for its ttl, then looked up again; expired answers make room for new ones.
func TestRecentLooksUpOncePerKey(t *testing.T) {
	c := newRecent[string, int](10*time.Second, 4)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	var looks atomic.Int32
	release := make(chan struct{})
	look := func(context.Context) int { looks.Add(1); <-release; return 7 }
	var wg sync.WaitGroup
	got := make([]int, 20)
	for i := range got {
		wg.Go(func() { got[i], _ = c.get(context.Background(), "k", look) })
	}
	// Wait for the first look-up to start, and for the others to wait on it.
	for looks.Load() == 0 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if n := looks.Load(); n != 1 {
		t.Errorf("20 concurrent readers made %d look-ups, want 1", n)
	}
	if slices.ContainsFunc(got, func(v int) bool { return v != 7 }) {
		t.Errorf("answers %v, want 7 for every reader", got)
	}
	quick := func(context.Context) int { looks.Add(1); return 8 }
	if v, _ := c.get(context.Background(), "k", quick); v != 7 || looks.Load() != 1 {
		t.Errorf("within its ttl: %d after %d look-ups, want the remembered 7 after 1", v, looks.Load())
	}
	now = now.Add(10 * time.Second)
	if v, _ := c.get(context.Background(), "k", quick); v != 8 || looks.Load() != 2 {
		t.Errorf("past its ttl: %d after %d look-ups, want a new 8 after 2", v, looks.Load())
	}
	for i := range 10 {
		c.get(context.Background(), fmt.Sprint(i), quick)
	}
	if n := c.size(); n > 4 {
		t.Errorf("%d answers held, want at most 4", n)
	}
	// A reader that gives up does not cancel the look-up others wait on.
	block := make(chan struct{})
	started := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	var lookErr error
	go func() {
		<-started
		cancel()
	}()
	done := make(chan int)
	go func() {
		v, _ := c.get(ctx, "slow", func(lctx context.Context) int { close(started); <-block; lookErr = lctx.Err(); return 9 })
		done <- v
	}()
	<-started
	<-ctx.Done()
	close(block)
	if v := <-done; v != 9 || lookErr != nil {
		t.Errorf("the starter's context ended: got %d, look-up context error %v; want 9, nil", v, lookErr)
	}
}

// A verdict rests on what its reader may see: a user of one namespace cannot tell
// "alive" from "none" for controllers elsewhere, and names match on whole words.
func TestVerdictFromWhatTheReaderSees(t *testing.T) {
	now := time.Unix(1000, 0)
	renewed := now.Add(-time.Second)
	ix := &controllerIndex{candidates: []candidate{
		{ref: gc.ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "kube-system", Name: "apiserver-wlxyz"},
			names: namesOf("apiserver-wlxyz", "apiserver-wlxyz_1234", nil), lease: true, renewed: &renewed, duration: 15 * time.Second},
		{ref: gc.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "acme-controller-manager"},
			names: namesOf("acme-controller-manager", "", nil), want: 1, have: 0},
		{ref: gc.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "tools", Name: "web"},
			names: namesOf("web", "", map[string]string{"app.kubernetes.io/name": "beta-operator"}), want: 2, have: 2},
	}}
	everything := Visible(nil)
	team := Visible(func(r gc.ObjectRef) bool { return r.Namespace == "team" })
	for _, tc := range []struct {
		finalizer string
		visible   Visible
		want      string
	}{
		{"apiserver.example.com/x", everything, Alive},
		{"apiserver.example.com/x", team, Unknown}, // the Lease is in kube-system
		{"apiserver-wl.example.com/x", everything, None},
		{"apiserver-wl.example.com/x", team, Unknown},
		{"apiserver-w0.example.com/x", team, Unknown}, // the same answer: nothing to tell prefixes apart
		{"acme.example.com/x", team, Down},
		{"acmex.example.com/x", everything, None}, // not a part of a word
		{"beta.example.com/x", everything, Alive}, // by its app label
	} {
		l := ix.liveness(tokensOf("", tc.finalizer), "", tc.finalizer, "team", tc.visible, now)
		if l.State != tc.want {
			t.Errorf("%s, seen by %s: %s (%s), want %s", tc.finalizer, map[bool]string{true: "an admin", false: "a user of team"}[tc.visible == nil], l.State, l.Says, tc.want)
		}
		for _, e := range l.Evidence {
			if !tc.visible.sees(e.Object) {
				t.Errorf("%s: evidence %v the reader may not see", tc.finalizer, e.Object)
			}
		}
	}
	// The reader's access is asked of the same things whatever matches: a name found in
	// hidden namespaces costs no more questions (nor time) than one found nowhere.
	asked := func(f string) int {
		n := 0
		ix.liveness(tokensOf("", f), "", f, "team", func(r gc.ObjectRef) bool { n++; return r.Namespace == "team" }, now)
		return n
	}
	if a, b := asked("apiserver.example.com/x"), asked("zzqq.example.com/x"); a != b {
		t.Errorf("access questions: %d for a name found in kube-system, %d for one found nowhere; want the same", a, b)
	}
	ix.truncated = 1
	if l := ix.liveness([]string{"nothing"}, "", "nothing.example.com/x", "team", everything, now); l.State != Unknown {
		t.Errorf("an index that could not hold every object: %s, want unknown rather than none", l.State)
	}
}

// TestClaimOfAStatefulSet: a claim's name is TEMPLATE-SET-ORDINAL, where template and set
// may hold dashes; the StatefulSet tells which split is its (its templates, its replicas
// and the start of its ordinals).
func TestClaimOfAStatefulSet(t *testing.T) {
	for _, tc := range []struct {
		claim, set, template string
		ordinal              int
		ok                   bool
	}{
		{"data-db-0", "db", "data", 0, true},
		{"data-web-db-12", "db", "data-web", 12, true},
		{"data-web-db-12", "web-db", "data", 12, true},
		{"data-db-x", "db", "", 0, false},
		{"db-0", "db", "", 0, false},
		{"data-other-0", "db", "", 0, false},
	} {
		template, ordinal, ok := claimOf(tc.claim, tc.set)
		if template != tc.template || ordinal != tc.ordinal || ok != tc.ok {
			t.Errorf("claimOf(%q, %q) = %q, %d, %v; want %q, %d, %v", tc.claim, tc.set, template, ordinal, ok, tc.template, tc.ordinal, tc.ok)
		}
	}
	set := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(2)), Ordinals: &appsv1.StatefulSetOrdinals{Start: 3},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}}
	for _, tc := range []struct {
		template string
		ordinal  int
		want     bool
	}{{"data", 3, true}, {"data", 4, true}, {"data", 2, false}, {"data", 5, false}, {"logs", 3, false}} {
		if got := makesClaim(set, tc.template, tc.ordinal); got != tc.want {
			t.Errorf("makesClaim(set of ordinals 3-4 with template data, %q, %d) = %v", tc.template, tc.ordinal, got)
		}
	}
}

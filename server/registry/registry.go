// Package registry is the clusters one gcscope serves and where each is. The server asks
// it for a cluster on every request to one; a single cluster is a registry of one (One),
// and several kubeconfig contexts are package fleet's. It lies below both, so that
// neither imports the other.
package registry

import (
	"context"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/history"
	"github.com/gcscope/gcscope/scenario"
	"github.com/gcscope/gcscope/server/security"
)

// Cluster is what the server serves of one cluster: its engine and what is built around
// it. Every field but Engine may be nil: Kube, and deletes answer 503; Authorizer, and
// everyone reads everything; Scenarios, and there is no scenario player; Deletions, and
// explanations say only what the engine's graph does; History, and the history routes
// answer 503. Engine is nil only for a recording replayed (gcscope replay).
type Cluster struct {
	Engine Engine
	// Kube is the configuration deletes are made with (as the authenticated user, when
	// the server's authentication impersonates).
	Kube       *rest.Config
	Authorizer security.Authorizer
	// Authenticator is the cluster's own review of a user's credential, when each cluster
	// decides who a user is (several clusters under --auth=kubernetes): the server asks it
	// on every request to the cluster and serves the request as the user it names. Nil: the
	// server's authentication answers for every cluster.
	Authenticator security.Authenticator
	Scenarios     ScenarioPlayer
	Deletions     Deletions
	History       History
}

// Engine is what the server needs of the garbage-collector engine (*gc.GarbageCollector).
type Engine interface {
	Snapshot() gc.Snapshot
	Node(types.UID) (gc.NodeDetail, bool)
	// ExplainFor explains uid to a reader who may see only what visible accepts (nil: all).
	ExplainFor(uid types.UID, visible func(gc.ObjectRef) bool) (gc.Explanation, bool)
	PredictDelete(types.UID, metav1.DeletionPropagation) (gc.Prediction, bool)
	Feed() *gc.Feed
	Registry() *prometheus.Registry
	SyncState() gc.SyncState
	Mode() gc.Mode
	ActionDelay() time.Duration
}

// ScenarioPlayer plays garbage-collection scenarios on the cluster (*scenario.Player is
// one). It writes with gcscope's own credentials, so it is given only on gcscope's
// embedded cluster: without it the scenario routes do not exist.
type ScenarioPlayer interface {
	Scenarios() []scenario.Info
	Runs() []scenario.Run
	Status(run string) (scenario.Run, bool)
	Play(ctx context.Context, id string) (scenario.Run, error)
	Release(ctx context.Context, run string) (scenario.Run, error)
	// Cleanup cleans run up, or every played namespace when run is "".
	Cleanup(ctx context.Context, run string) (scenario.Cleaned, error)
}

// Deletions explains the deletions the collector does not own alone (*deletion.Explainer):
// namespaces, other controllers' finalizers, failing API discovery, the stuck list.
type Deletions interface {
	Explain(ctx context.Context, ex gc.Explanation, visible deletion.Visible) *deletion.Report
	PredictNamespace(uid types.UID, policy metav1.DeletionPropagation) (gc.Prediction, bool)
	Stuck(ctx context.Context, olderThan time.Duration, visible deletion.Visible) deletion.StuckReport
	CountStuck(olderThan time.Duration, visible deletion.Visible) int
	APIServices(ctx context.Context, failures map[string]gc.GroupFailure, visible deletion.Visible) []deletion.APIServiceReport
	Consequences(ctx context.Context, p gc.Prediction, visible deletion.Visible) deletion.Consequences
}

// History is what the server needs of the recording of the engine's feed
// (*history.Store); nil when gcscope runs without --history.
type History interface {
	Query(context.Context, history.Query) (history.Page, error)
	Places(ctx context.Context, namespaces []string) ([]gc.ObjectRef, error)
	StateAt(context.Context, time.Time) (history.State, error)
	StateAtSeq(ctx context.Context, session int64, seq uint64) (history.State, error)
	Gaps(ctx context.Context, from, to time.Time, limit int) ([]history.Gap, error)
	Timeline(context.Context, history.TimelineQuery) (history.Timeline, error)
	Cascades(context.Context, history.CascadeQuery) ([]history.Cascade, error)
	Export(ctx context.Context, w io.Writer, o history.ExportOptions) (history.ExportEnd, error)
	Status() history.Status
	Registry() *prometheus.Registry
}

// State is where a cluster's engine is.
type State string

const (
	Idle       State = "idle"       // not started: it starts when first opened
	Connecting State = "connecting" // asking the apiserver who it is
	Syncing    State = "syncing"    // the engine fills its graph
	Ready      State = "ready"
	Failed     State = "failed" // see Status.Reason; opened again, it is retried
	// Refused: the cluster is up but does not accept the user's credential (GET
	// /api/v1/clusters as that user; a remote gcscope, or a cluster that reviews
	// credentials itself); Status.Reason says what it answered.
	Refused State = "refused"
)

// Status is one cluster as GET /api/v1/clusters lists it.
type Status struct {
	Name    string    `json:"name"`
	Server  string    `json:"server,omitempty"` // the apiserver's URL
	State   State     `json:"state"`
	Reason  string    `json:"reason,omitempty"` // why it failed, or what it waits for
	Since   time.Time `json:"since,omitzero"`   // when it entered State
	Default bool      `json:"default,omitempty"`
}

// Clusters are the clusters one gcscope serves.
type Clusters interface {
	// List is every cluster, the default one first.
	List() []Status
	// Open returns name's cluster, with start starting its engine when it is idle or
	// failed; the cluster is nil until it has an engine, and st then says where it is.
	// known is false for no such cluster.
	Open(name string, start bool) (c *Cluster, st Status, known bool)
}

// One is the registry of a single cluster, name, whose engine runs from the start; ready
// (nil: always) says whether it has synced, else what it waits for.
func One(name string, c *Cluster, ready func() error) Clusters {
	return &one{name: name, c: c, ready: ready}
}

type one struct {
	name  string
	c     *Cluster
	ready func() error
}

func (o *one) List() []Status { return []Status{o.status()} }

// Open always has the cluster (its engine runs from the start), so it asks nothing of
// ready: a request to the cluster does not pay for List's status.
func (o *one) Open(name string, _ bool) (*Cluster, Status, bool) {
	if name != o.name {
		return nil, Status{}, false
	}
	return o.c, Status{Name: o.name}, true
}

func (o *one) status() Status {
	st := Status{Name: o.name, State: Ready, Default: true}
	if o.c.Kube != nil {
		st.Server = o.c.Kube.Host
	}
	if o.ready != nil {
		if err := o.ready(); err != nil {
			st.State, st.Reason = Syncing, err.Error()
		}
	}
	return st
}

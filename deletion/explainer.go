package deletion

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/gcscope/gcscope/gc"
)

// Graph is what the explainer reads of the engine (*gc.GarbageCollector).
type Graph interface {
	Node(uid types.UID) (gc.NodeDetail, bool)
	InNamespace(namespace string) []gc.NodeState
	BeingDeleted() []gc.NodeState
	PredictDelete(uid types.UID, policy metav1.DeletionPropagation) (gc.Prediction, bool)
	SyncState() gc.SyncState
}

// Explainer answers the questions of this package for one cluster.
type Explainer struct {
	graph    Graph
	kube     kubernetes.Interface
	dynamic  dynamic.Interface
	metadata metadata.Interface
	mapper   meta.RESTMapper
	// controllers is the shared index of what may be a controller (controllers.go);
	// origins, who added each finalizer lately (finalizer.go).
	controllers *recent[struct{}, *controllerIndex]
	origins     *recent[originKey, FinalizerOrigin]
	// apiServices are the APIServices at fault lately, by the group versions failing.
	apiServices *recent[string, []APIServiceReport]
}

// New builds an explainer over the engine's graph and the cluster of cfg (read with
// gcscope's own credentials: callers filter what they show with a visible function).
func New(g Graph, cfg *rest.Config) (*Explainer, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// A deferred mapper looks discovery up again when a kind is missing (a new CRD).
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	return &Explainer{graph: g, kube: kube, dynamic: dyn, metadata: md, mapper: mapper,
		controllers: newRecent[struct{}, *controllerIndex](controllersTTL, 1),
		origins:     newRecent[originKey, FinalizerOrigin](originTTL, maxOriginsKept),
		apiServices: newRecent[string, []APIServiceReport](apiServicesTTL, 4)}, nil
}

// Visible says whether the reader may see an object (nil: everything). A ref with only an
// APIVersion and a Kind asks whether the reader may see every object of that kind: list
// it in all namespaces.
type Visible func(gc.ObjectRef) bool

func (v Visible) sees(ref gc.ObjectRef) bool { return v == nil || v(ref) }

package gc

import (
	"errors"
	"fmt"
)

// errEnqueuedVirtualDeleteEvent: the item was found absent and a virtual delete event is
// on its way to the graph builder; nothing to retry.
var errEnqueuedVirtualDeleteEvent = errors.New("enqueued virtual delete event")

// errNamespacedOwnerOfClusterScopedObject: a cluster-scoped object names a namespaced
// owner. Retrying cannot fix it, and the object is never collected for it.
var errNamespacedOwnerOfClusterScopedObject = errors.New("cluster-scoped objects cannot refer to namespaced owners")

// restMappingError: an ownerReference names a kind the REST mapper does not know (yet):
// a custom resource not discovered yet, or a version no longer served. Retried with
// backoff; the dependent is never deleted for it.
type restMappingError struct {
	kind, version string
}

func (e *restMappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s", e.kind, e.version)
}

// Message is what a user should read about it.
func (e *restMappingError) Message() string {
	return fmt.Sprintf("the kind %q of version %q is not served by the apiserver (yet); the reference is retried and never treated as absent", e.kind, e.version)
}

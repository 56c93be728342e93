package served

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// mapperResetPeriod is how often the shared REST mapper forgets discovery, as
// kube-controller-manager resets its own: new kinds and versions become mappable, and
// ones no longer served stop being mapped.
const mapperResetPeriod = 30 * time.Second

// restMapper maps kinds to resources for deletes and for per-user reads, over the
// cluster's discovery (nil without a cluster connection).
type restMapper struct {
	once    sync.Once
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	mu      sync.Mutex
	resetAt time.Time
}

// RESTMapper returns the cluster's mapper, reset when it is older than mapperResetPeriod.
func (c *Cluster) RESTMapper() meta.RESTMapper {
	m := &c.mapper
	m.once.Do(func() {
		if c.Kube == nil {
			return
		}
		dc := discovery.NewDiscoveryClientForConfigOrDie(c.Kube)
		m.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
		m.resetAt = time.Now()
	})
	if m.mapper == nil {
		return nil
	}
	m.mu.Lock()
	if time.Since(m.resetAt) > mapperResetPeriod {
		m.mapper.Reset()
		m.resetAt = time.Now()
	}
	m.mu.Unlock()
	return m.mapper
}

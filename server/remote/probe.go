package remote

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gcscope/gcscope/server/registry"
)

// Each remote has a prober of its own: it asks the remote's /readyz (no credential: the
// probe is the hub's, and /readyz needs none) every ProbeInterval, within ProbeTimeout, so
// a remote that is slow or gone holds up nothing but its own probe. A request that cannot
// reach the remote has the prober look at once.

// minProbeGap bounds how often requests that fail can have the remote probed.
const minProbeGap = 500 * time.Millisecond

// Status is where the remote is now, as the picker lists it.
func (rm *Remote) Status() registry.Status {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.status
}

// setStatus records state and reason; Since moves only when the state changes.
func (rm *Remote) setStatus(state registry.State, reason string) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if rm.status.State != state {
		rm.status.Since = time.Now()
		rm.log.Info("remote cluster state", "state", state, "reason", reason)
	}
	rm.status.State, rm.status.Reason = state, reason
}

// probeNow asks the prober for a probe without waiting for its interval.
func (rm *Remote) probeNow() {
	select {
	case rm.kick <- struct{}{}:
	default:
	}
}

// runProber probes the remote until ctx ends.
func (rm *Remote) runProber(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-rm.kick:
			t.Stop()
		}
		rm.probe(ctx)
		t.Reset(rm.limits.ProbeInterval)
		select { // requests that fail one after another ask for one probe per gap at most
		case <-ctx.Done():
			return
		case <-time.After(minProbeGap):
		}
	}
}

// probe asks the remote's /readyz once.
func (rm *Remote) probe(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, rm.limits.ProbeTimeout)
	defer cancel()
	u, _ := rm.endpoint("/readyz")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		rm.setStatus(registry.Failed, err.Error())
		return
	}
	req.Header.Set("User-Agent", "gcscope-hub")
	resp, err := rm.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && ctx.Err() != context.DeadlineExceeded {
			return // the hub is stopping
		}
		rm.setStatus(registry.Failed, fmt.Sprintf("cannot reach %s: %v", rm.base, err))
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	text := strings.TrimSpace(string(body))
	switch {
	case resp.StatusCode == http.StatusOK:
		rm.setStatus(registry.Ready, "")
	case resp.StatusCode == http.StatusServiceUnavailable:
		// Its engine syncs: its routes already answer (as a local cluster's do).
		rm.setStatus(registry.Syncing, text)
	default:
		rm.setStatus(registry.Failed, fmt.Sprintf("%s/readyz answered %d: %s (is it a gcscope?)", rm.base, resp.StatusCode, text))
	}
}

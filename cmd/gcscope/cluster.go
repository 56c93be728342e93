package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/fleet"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server/registry"
	"github.com/gcscope/gcscope/server/security"
)

// clusterParts are one cluster's engine (not yet run) and what gcscope builds around it.
type clusterParts struct {
	engine    *gc.GarbageCollector
	deletions *deletion.Explainer
	history   registry.History // nil with --history=false
	stop      func()           // the recording's last writes
}

// buildCluster makes a cluster's engine, its deletion explainer and, with --history, its
// recording (in historyDir, or a directory named for the context under it when context
// is given).
func buildCluster(cfg *config, restConfig *rest.Config, dataDir, context string, log *slog.Logger, stdout io.Writer) (*clusterParts, error) {
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS, restConfig.Burst = float32(cfg.qps), cfg.burst
	engine, err := gc.NewForConfig(restConfig, gc.Options{
		Workers:          cfg.workers,
		Mode:             cfg.gcMode,
		ActionDelay:      cfg.actionDelay,
		SlowMotionOff:    cfg.slowMotionOff,
		ShadowOverdue:    cfg.shadowOverdue,
		DiscoveryPeriod:  cfg.discoveryPeriod,
		IgnoredResources: cfg.ignored,
		Logger:           log.With("component", "gc"),
	})
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	deletions, err := deletion.New(engine, restConfig)
	if err != nil {
		engine.Close()
		return nil, fmt.Errorf("deletion explainer: %w", err)
	}
	engine.Registry().MustRegister(deletion.NewStuckCollector(engine, deletion.DefaultStuckAfter))
	p := &clusterParts{engine: engine, deletions: deletions, stop: func() {}}
	if cfg.history {
		store, stop, err := startHistory(cfg, dataDir, pathSegment(context), engine, log, stdout)
		if err != nil {
			engine.Close()
			return nil, fmt.Errorf("--history: %w", err)
		}
		p.history, p.stop = store, stop
	}
	return p, nil
}

// pathSegment is a context's name as one directory name ("" stays ""): escaped, and a
// long one cut and told apart by a digest of the whole (a file name has 255 bytes).
func pathSegment(name string) string {
	if name == "" {
		return ""
	}
	s := url.PathEscape(name)
	if s == "." || s == ".." {
		s = "context-" + s
	}
	if len(s) > 100 {
		sum := sha256.Sum256([]byte(name))
		s = s[:80] + "-" + hex.EncodeToString(sum[:8])
	}
	return s
}

// startFleet starts the clusters of cfg's contexts, each with its own engine, the default
// one now and the others when first opened (or all now, --start-contexts=all). With
// --auth=kubernetes each cluster decides who a user is: it reviews the credential itself
// (TokenReview, cached per cluster), narrows reads by its RBAC and has deletes
// impersonate the user it names; door signs a user in when one of them accepts the
// credential (nil without --auth=kubernetes).
func startFleet(cfg *config, getenv func(string) string, log *slog.Logger, stdout io.Writer) (fl *fleet.Fleet, door security.Authenticator, err error) {
	rules := loadingRules(cfg, getenv)
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %v", kubeconfigName(cfg), oneLine(err))
	}
	names, err := fleet.Contexts(raw, cfg.contexts, kubeconfigName(cfg))
	if err != nil {
		return nil, nil, err
	}
	var members []fleet.Member
	for _, name := range names {
		load := func() (*rest.Config, error) {
			raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
			if err != nil {
				return nil, err
			}
			return clientcmd.NewNonInteractiveClientConfig(raw, name, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
		}
		rc, err := load()
		members = append(members, fleet.Member{Name: name, Config: rc, Err: err, Reload: load})
	}
	reviewers, door, err := clusterReviewers(cfg, members)
	if err != nil {
		return nil, nil, err
	}
	fl, err = fleet.New(fleet.Options{
		Members: members,
		Logger:  log.With("component", "fleet"),
		Build: func(_ context.Context, name string, rc *rest.Config) (*fleet.Built, error) {
			clog := log.With("context", name)
			p, err := buildCluster(cfg, rc, cfg.dataDir, name, clog, stdout)
			if err != nil {
				return nil, err
			}
			c := registry.Cluster{Engine: p.engine, Kube: rc, Deletions: p.deletions, History: p.history}
			if cfg.auth == "kubernetes" {
				if c.Authenticator, c.Authorizer, err = reviewers.of(name, rc); err != nil {
					p.stop()
					return nil, err
				}
			}
			return &fleet.Built{
				Cluster: c,
				Engine:  p.engine,
				Stop:    p.stop,
			}, nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	fl.Start(cfg.startContexts == "all")
	when := "each engine starts when the page or the API first opens its context"
	if cfg.startContexts == "all" {
		when = "every engine starting now"
	}
	fmt.Fprintf(stdout, "serving %d contexts of %s: %s (the default), %s; %s\n", len(names), kubeconfigName(cfg), names[0], strings.Join(names[1:], ", "), when)
	return fl, door, nil
}

// reviewers are each cluster's reviews of users (--auth=kubernetes with several contexts),
// made once per cluster: their caches are the cluster's.
type reviewers struct {
	mu sync.Mutex
	by map[string]reviewer
}

type reviewer struct {
	tokens *security.TokenReviewer
	access *security.AccessReviewer
}

// of is cluster name's reviewers, made from config when it had none (its kubeconfig could
// not give one at start-up: it signs no one in at the door, but reviews its own requests).
func (rv *reviewers) of(name string, config *rest.Config) (security.Authenticator, security.Authorizer, error) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	r, ok := rv.by[name]
	if !ok {
		tokens, access, err := security.ClusterReviewers(config)
		if err != nil {
			return nil, nil, fmt.Errorf("context %s: %w", name, err)
		}
		r = reviewer{tokens, access}
		rv.by[name] = r
	}
	return r.tokens, r.access, nil
}

// clusterReviewers makes the reviewers of every member its kubeconfig can reach, and the
// door over them, for --auth=kubernetes (nil, nil otherwise).
func clusterReviewers(cfg *config, members []fleet.Member) (*reviewers, security.Authenticator, error) {
	if cfg.auth != "kubernetes" {
		return nil, nil, nil
	}
	rv := &reviewers{by: map[string]reviewer{}}
	var door security.AnyOf
	for _, m := range members {
		if m.Config == nil {
			continue
		}
		tokens, _, err := rv.of(m.Name, m.Config)
		if err != nil {
			return nil, nil, err
		}
		door = append(door, tokens)
	}
	if len(door) == 0 {
		return nil, nil, errors.New("--auth=kubernetes: no context of the kubeconfig can be reached to review users' credentials")
	}
	return rv, door, nil
}

package remote

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/gcscope/gcscope/server/registry"
)

// Options are the hub's settings for all its remotes.
type Options struct {
	Logger *slog.Logger
	// AllowedOrigins are the hub's extra allowed origins (server.Options.AllowedOrigins),
	// for the stream's origin check.
	AllowedOrigins []string
	Limits         Limits
	// MaxStreams bounds the streams relayed to one remote; default 256.
	MaxStreams int
}

func (o Options) maxStreams() int {
	if o.MaxStreams > 0 {
		return o.MaxStreams
	}
	return 256
}

// Set is the hub's remotes, in the order given.
type Set struct {
	list []*Remote
	by   map[string]*Remote
}

// NewSet makes the remotes of cfgs (CA files are read now); names must differ.
func NewSet(cfgs []Config, o Options) (*Set, error) {
	s := &Set{by: map[string]*Remote{}}
	for _, c := range cfgs {
		if _, dup := s.by[c.Name]; dup {
			return nil, fmt.Errorf("remote %q is given twice", c.Name)
		}
		rm, err := newRemote(c, o)
		if err != nil {
			return nil, err
		}
		s.list = append(s.list, rm)
		s.by[c.Name] = rm
	}
	return s, nil
}

// Run probes every remote, each on its own, until ctx ends.
func (s *Set) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, rm := range s.list {
		wg.Go(func() { rm.runProber(ctx) })
	}
	wg.Wait()
}

// Lookup is the remote named name (none in a nil Set).
func (s *Set) Lookup(name string) (*Remote, bool) {
	if s == nil {
		return nil, false
	}
	rm, ok := s.by[name]
	return rm, ok
}

// List is every remote's status, as probed last; it waits for none.
func (s *Set) List() []registry.Status {
	out := make([]registry.Status, 0, len(s.list))
	for _, rm := range s.list {
		out = append(out, rm.Status())
	}
	return out
}

// Open knows the remote clusters; none has an engine here (the hub proxies to it).
func (s *Set) Open(name string, _ bool) (*registry.Cluster, registry.Status, bool) {
	rm, ok := s.by[name]
	if !ok {
		return nil, registry.Status{}, false
	}
	return nil, rm.Status(), true
}

var _ registry.Clusters = (*Set)(nil)

// Join lists local's clusters (nil: none) and then the remotes, as one registry: the
// default is local's, or the first remote when the hub serves no cluster of its own.
func Join(local registry.Clusters, remotes *Set) (registry.Clusters, error) {
	if local == nil {
		return joined{remotes: remotes}, nil
	}
	for _, st := range local.List() {
		if _, ok := remotes.by[st.Name]; ok {
			return nil, fmt.Errorf("remote %q has the name of a cluster the hub serves itself", st.Name)
		}
	}
	return joined{local: local, remotes: remotes}, nil
}

type joined struct {
	local   registry.Clusters
	remotes *Set
}

func (j joined) List() []registry.Status {
	var out []registry.Status
	if j.local != nil {
		out = j.local.List()
	}
	rs := j.remotes.List()
	if j.local == nil && len(rs) > 0 {
		rs[0].Default = true
	}
	return append(out, rs...)
}

func (j joined) Open(name string, start bool) (*registry.Cluster, registry.Status, bool) {
	if _, ok := j.remotes.by[name]; ok {
		return j.remotes.Open(name, start)
	}
	if j.local == nil {
		return nil, registry.Status{}, false
	}
	return j.local.Open(name, start)
}

// ForUser is list (a registry's List) as the user of cred sees it: a ready remote that does
// not accept the credential is Refused, with its answer. The remotes are asked together,
// each within ProbeTimeout, and answers are kept (users.go): a slow remote delays
// the list by that bound at most, and is listed as probed when it does not answer in time.
func (s *Set) ForUser(ctx context.Context, list []registry.Status, cred Credential) []registry.Status {
	out := append([]registry.Status(nil), list...)
	var wg sync.WaitGroup
	for i, st := range out {
		rm, ok := s.by[st.Name]
		if !ok || (st.State != registry.Ready && st.State != registry.Syncing) {
			continue
		}
		wg.Go(func() {
			if why := rm.refuses(ctx, cred); why != "" {
				out[i].State, out[i].Reason = registry.Refused, why
			}
		})
	}
	wg.Wait()
	return out
}

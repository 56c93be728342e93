package security

// Whether a user may do something, asked of the cluster (SubjectAccessReview).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Authorizer answers authorization questions about users.
type Authorizer interface {
	// Allowed reports whether u may do what attrs (resource or non-resource) say.
	Allowed(ctx context.Context, u *User, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) (bool, error)
}

// AccessReviewer is an Authorizer backed by the cluster's SubjectAccessReview, with a
// short, bounded cache; concurrent questions of one key are one review.
type AccessReviewer struct {
	client authorizationclient.SubjectAccessReviewInterface
	ttl    time.Duration
	cache  *lru[string, bool]
	group  singleflight.Group
}

const accessCacheSize = 16384

// AccessCacheTTL is how long an answer is kept (by AccessReviewer, and by a stream's
// view of what its user may see before it asks again).
const AccessCacheTTL = 10 * time.Second

// NewAccessReviewer asks client.
func NewAccessReviewer(client authorizationclient.SubjectAccessReviewInterface) *AccessReviewer {
	return &AccessReviewer{client: client, ttl: AccessCacheTTL, cache: newLRU[string, bool](accessCacheSize, nil)}
}

// Allowed implements Authorizer.
func (a *AccessReviewer) Allowed(ctx context.Context, u *User, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) (bool, error) {
	key := accessKey(u, res, nonRes)
	if ok, hit := a.cache.get(key); hit {
		return ok, nil
	}
	v, err, _ := a.group.Do(key, func() (any, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Name, Groups: u.Groups, UID: u.UID, Extra: u.extra(), ResourceAttributes: res, NonResourceAttributes: nonRes}}
		out, err := a.client.Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("asking the cluster whether %s may read: %w", u.Name, err)
		}
		a.cache.put(key, out.Status.Allowed, a.ttl)
		return out.Status.Allowed, nil
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

func accessKey(u *User, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) string {
	var b strings.Builder
	b.WriteString(u.Name)
	for _, g := range u.Groups {
		b.WriteString("\x00g:" + g)
	}
	b.WriteString("\x00uid:" + u.UID)
	for _, k := range slices.Sorted(maps.Keys(u.Extra)) {
		b.WriteString("\x00x:" + k + "=" + strings.Join(u.Extra[k], ","))
	}
	if res != nil {
		fmt.Fprintf(&b, "\x01%s\x00%s\x00%s\x00%s", res.Verb, res.Group, res.Resource, res.Namespace)
	}
	if nonRes != nil {
		fmt.Fprintf(&b, "\x02%s\x00%s", nonRes.Verb, nonRes.Path)
	}
	return b.String()
}

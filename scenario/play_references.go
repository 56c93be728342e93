package scenario

// The scenarios about references themselves: an owner that never existed (dangling),
// an ownership cycle, and a reference across namespaces.

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/gc"
)

func danglingSteps(x *runner) []step {
	var keeper, lonely, shared *corev1.ConfigMap
	ghost := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "ghost", UID: uuid.NewUUID(), BlockOwnerDeletion: ptr.To(true)}
	var created time.Time
	return []step{{title: "Create ConfigMap keeper, a real owner", run: func(ctx context.Context) (string, error) {
		var err error
		if keeper, err = x.configMap(ctx, x.ns, "keeper", nil); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", keeper, false)
		return "Created ConfigMap keeper", x.waitObserved(ctx, keeper.UID)
	}},
		{title: "Create lonely (owner: Deployment ghost, a uid no object has) and shared (owners: ghost and keeper)", run: func(ctx context.Context) (string, error) {
			only := ghost
			only.Controller = ptr.To(true)
			var err error
			if lonely, err = x.configMap(ctx, x.ns, "lonely", nil, only); err != nil {
				return "", err
			}
			x.add("v1", "ConfigMap", lonely, true)
			if shared, err = x.configMap(ctx, x.ns, "shared", nil, ghost, blocking("v1", "ConfigMap", keeper)); err != nil {
				return "", err
			}
			x.add("v1", "ConfigMap", shared, false)
			created = time.Now()
			// No wait for the collector to observe them: it may act on them at once.
			return fmt.Sprintf("Created lonely and shared, naming Deployment ghost (uid %s, which no object has) as their owner", ghost.UID), nil
		}},
		{title: "Watch: the collector deletes lonely and removes the ghost reference from shared", run: func(ctx context.Context) (string, error) {
			err := x.until(ctx, "lonely deleted and the ghost reference removed from shared", func(ctx context.Context) (bool, error) {
				if g, _ := x.gone(ctx, configMapsGVR, x.ns, "lonely", lonely.UID); !g {
					return false, nil
				}
				s, err := x.p.core.CoreV1().ConfigMaps(x.ns).Get(ctx, "shared", metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				return !slices.ContainsFunc(s.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == ghost.UID }), nil
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("The collector deleted lonely and removed the ghost reference from shared, which keeper still owns (%s after they were created)", since(created)), nil
		}}}
}

func cycleSteps(x *runner) []step {
	var a, b, c *corev1.ConfigMap
	var deleted time.Time
	return []step{{title: "Create ConfigMap a, b owned by a, and c owned by b", run: func(ctx context.Context) (string, error) {
		var err error
		if a, err = x.configMap(ctx, x.ns, "a", nil); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", a, true)
		if b, err = x.configMap(ctx, x.ns, "b", nil, blocking("v1", "ConfigMap", a)); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", b, false)
		if c, err = x.configMap(ctx, x.ns, "c", nil, blocking("v1", "ConfigMap", b)); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", c, false)
		return "Created a, b owned by a, and c owned by b", x.waitObserved(ctx, a.UID, b.UID, c.UID)
	}},
		{title: "Close the circle: a gets an owner reference to c", run: func(ctx context.Context) (string, error) {
			a.OwnerReferences = []metav1.OwnerReference{blocking("v1", "ConfigMap", c)}
			var err error
			if a, err = x.p.core.CoreV1().ConfigMaps(x.ns).Update(ctx, a, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
				return "", fmt.Errorf("give a an owner reference to c: %w", err)
			}
			if e := x.p.opts.Engine; e != nil {
				// Delete only once the collector's graph holds the circle.
				err = x.until(ctx, "the collector to see a owned by c", func(context.Context) (bool, error) {
					n, ok := e.Node(a.UID)
					return ok && slices.ContainsFunc(n.Owners, func(o gc.OwnerRef) bool { return o.UID == c.UID }), nil
				})
			}
			return "a is owned by c: a owns b owns c owns a", err
		}},
		{title: "Delete a with propagationPolicy Foreground", run: func(ctx context.Context) (string, error) {
			deleted = time.Now()
			err := x.p.core.CoreV1().ConfigMaps(x.ns).Delete(ctx, "a", metav1.DeleteOptions{
				PropagationPolicy: ptr.To(metav1.DeletePropagationForeground), Preconditions: &metav1.Preconditions{UID: &a.UID}})
			if err != nil {
				return "", fmt.Errorf("delete a: %w", err)
			}
			return "Deleted a with propagationPolicy Foreground: a waits for b, b for c, c for a", nil
		}},
		{title: "Watch: the collector unblocks the circle and deletes a, b and c", run: func(ctx context.Context) (string, error) {
			err := x.until(ctx, "a, b and c gone", func(ctx context.Context) (bool, error) {
				for _, cm := range []*corev1.ConfigMap{a, b, c} {
					if g, _ := x.gone(ctx, configMapsGVR, x.ns, cm.Name, cm.UID); !g {
						return false, nil
					}
				}
				return true, nil
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("The collector broke the circle: a, b and c are gone, %s after the delete", since(deleted)), nil
		}}}
}

func crossNamespaceSteps(x *runner) []step {
	var owner, child, stray *corev1.ConfigMap
	var created time.Time
	return []step{{title: "Create ConfigMap owner and its dependent child", run: func(ctx context.Context) (string, error) {
		var err error
		if owner, err = x.configMap(ctx, x.ns, "owner", nil); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", owner, false)
		if child, err = x.configMap(ctx, x.ns, "child", nil, blocking("v1", "ConfigMap", owner)); err != nil {
			return "", err
		}
		x.add("v1", "ConfigMap", child, false)
		return fmt.Sprintf("Created owner and child in %s", x.ns), x.waitObserved(ctx, owner.UID, child.UID)
	}},
		{title: "Create stray in the -away namespace, naming owner (of another namespace) as its owner", run: func(ctx context.Context) (string, error) {
			var err error
			if stray, err = x.configMap(ctx, x.namespaces[1], "stray", nil, blocking("v1", "ConfigMap", owner)); err != nil {
				return "", err
			}
			created = time.Now()
			x.add("v1", "ConfigMap", stray, true)
			return fmt.Sprintf("Created stray in %s, naming owner of %s (uid %s) as its owner", x.namespaces[1], x.ns, owner.UID), nil
		}},
		{title: "Watch: the collector deletes stray and records a Warning event OwnerRefInvalidNamespace; child stays", run: func(ctx context.Context) (string, error) {
			err := x.until(ctx, "stray deleted", func(ctx context.Context) (bool, error) {
				return x.gone(ctx, configMapsGVR, x.namespaces[1], stray.Name, stray.UID)
			})
			if err != nil {
				return "", err
			}
			took := since(created)
			// The event may be written a moment after the delete.
			var event string
			_ = x.until(ctx, "the OwnerRefInvalidNamespace event", func(ctx context.Context) (bool, error) {
				events, err := x.p.core.CoreV1().Events(x.namespaces[1]).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, nil
				}
				for _, ev := range events.Items {
					if ev.Reason == "OwnerRefInvalidNamespace" && ev.InvolvedObject.UID == stray.UID {
						event = fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Message)
						return true, nil
					}
				}
				return time.Since(created) > 30*time.Second, nil
			})
			if g, _ := x.gone(ctx, configMapsGVR, x.ns, child.Name, child.UID); g {
				return "", fmt.Errorf("child was deleted: its owner is in its own namespace and exists")
			}
			if event == "" {
				event = "no OwnerRefInvalidNamespace event was seen"
			}
			return fmt.Sprintf("The collector deleted stray (%s after it was created); child stays. Event on stray: %s", took, event), nil
		}}}
}

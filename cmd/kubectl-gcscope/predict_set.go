package main

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
)

// kubectl gcscope predict TYPE[,TYPE…] -l SELECTOR [-n NS | -A]: the delete people make as
// kubectl delete -l, predicted as one (the collector acting on all the matches at once),
// not one object at a time.

// selection is a delete by label selector, resolved to the objects it matches.
type selection struct {
	types    string // TYPE[,TYPE…] as given
	selector string
	all      bool // -A
	uids     []types.UID
}

// matchSelector lists, with the user's credentials, the objects of each type that the
// selector matches, in the namespace (or all, with all).
func matchSelector(ctx context.Context, k *kube, sel *selection) error {
	for _, kind := range strings.Split(sel.types, ",") {
		if kind == "" {
			continue
		}
		t, err := k.resolve(kind, "")
		if err != nil {
			return usageError{err}
		}
		r := k.metadata.Resource(t.mapping.Resource)
		opts := metav1.ListOptions{LabelSelector: sel.selector}
		listCtx, cancel := context.WithTimeout(ctx, requestTimeout)
		var l *metav1.PartialObjectMetadataList
		if t.mapping.Scope.Name() == meta.RESTScopeNameNamespace && !sel.all {
			l, err = r.Namespace(k.namespace).List(listCtx, opts)
		} else {
			l, err = r.List(listCtx, opts)
		}
		cancel()
		if err != nil {
			return k.apiError(err, "")
		}
		for _, o := range l.Items {
			sel.uids = append(sel.uids, o.UID)
		}
	}
	return nil
}

// predictSelection predicts deleting everything sel matches, with policy.
func predictSelection(ctx context.Context, o *options, sel *selection, policy metav1.DeletionPropagation, cascade, output string) error {
	if sel.types == "" {
		return usageError{fmt.Errorf("-l %s: name the types to delete, as kubectl delete does (predict deploy,svc -l %s)", sel.selector, sel.selector)}
	}
	if _, err := labels.Parse(sel.selector); err != nil {
		return usageError{fmt.Errorf("-l %q: %v", sel.selector, err)}
	}
	k, err := connect(o)
	if err != nil {
		return err
	}
	if err := k.reach(); err != nil {
		return err
	}
	if err := matchSelector(ctx, k, sel); err != nil {
		return err
	}
	where := " -n " + k.namespace
	if sel.all {
		where = " -A"
	}
	header := fmt.Sprintf("kubectl delete %s -l %s%s --cascade=%s would:\n", sel.types, sel.selector, where, cascade)
	if len(sel.uids) == 0 {
		fmt.Fprint(o.stdout, header+"\ndelete nothing: no object matches.\n")
		return nil
	}
	s, err := syncedSession(ctx, k, o)
	if err != nil {
		return err
	}
	defer s.stop()
	pr, missing := s.engine.PredictDeleteSet(sel.uids, policy)
	if len(missing) == len(sel.uids) {
		return fmt.Errorf("the %d objects matched were deleted while the engine listed the cluster", len(missing))
	}
	x, err := deletion.New(s.engine, k.short)
	if err != nil {
		return err
	}
	if pr.Order == "" {
		orderPrediction(s.engine, &pr)
	}
	c := x.Consequences(ctx, pr, nil) // in the order the lists now have
	if output == "json" {
		fmt.Fprint(o.stdout, jsonText(struct {
			gc.Prediction
			deletion.Consequences
		}{pr, c}))
		return nil
	}
	text := renderPrediction(pr, c, cascade, paint(o.colored(o.stdout)))
	// The header names the selection, not its first match.
	_, rest, _ := strings.Cut(text, "\n")
	fmt.Fprintf(o.stdout, "%s%s match, predicted together (as the collector acts when they all go at once):\n%s", header, counted(len(sel.uids)-len(missing), "object"), rest)
	return nil
}

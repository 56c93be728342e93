// Package feedtest helps the tests of the feed's consumers walk its vocabulary.
package feedtest

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// Sample is an event of type t with its payload set (found by t.Payload(), the JSON name
// of the Event field that carries it), about object "sample" (uid "uid-sample") owned by
// "uid-owner": what a consumer's test hands it to see that it handles t. It fails when
// the vocabulary declares no payload field for t.
func Sample(t gc.EventType, seq uint64) (gc.Event, error) {
	e := gc.Event{Seq: seq, Time: time.Unix(1_700_000_000, 0).UTC(), Type: t}
	field, ok := fieldByJSON(reflect.TypeFor[gc.Event](), t.Payload())
	if !ok || field.Type.Kind() != reflect.Pointer {
		return e, fmt.Errorf("event type %q: no payload field %q in gc.Event", t, t.Payload())
	}
	p := reflect.New(field.Type.Elem())
	fill(p.Interface())
	reflect.ValueOf(&e).Elem().FieldByIndex(field.Index).Set(p)
	return e, nil
}

var (
	object = gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "sample", UID: "uid-sample"}
	owner  = gc.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner"}
)

// fill gives a payload the sample object; a payload of a type it does not know stays zero.
func fill(p any) {
	switch p := p.(type) {
	case *gc.NodeState:
		*p = gc.NodeState{ObjectRef: object, Owners: []gc.OwnerRef{owner}, Observed: true}
	case *gc.Edge:
		*p = gc.Edge{Dependent: object.UID, Owner: owner.UID}
	case *gc.QueueEvent:
		*p = gc.QueueEvent{Queue: gc.AttemptToDelete, Op: gc.QueueAdded, Object: object, Counts: &gc.QueueCounts{Depth: 1}}
	case *gc.Action:
		*p = gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbGet, Object: object}
	case *gc.SyncState:
		*p = gc.SyncState{Resources: []string{"configmaps"}}
	case *gc.ShadowDecision:
		*p = gc.ShadowDecision{ID: 1, Action: gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: object, Shadow: true},
			Outcome: gc.ShadowPending}
	}
}

// fieldByJSON is the field of struct type st whose JSON name is name.
func fieldByJSON(st reflect.Type, name string) (reflect.StructField, bool) {
	for f := range st.Fields() {
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name && name != "" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

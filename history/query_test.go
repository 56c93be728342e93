package history

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// recorded records a few thousand synthetic events and returns them all, oldest first.
func recorded(t *testing.T) (*Store, *synth, []Record) {
	t.Helper()
	e := newSynth(1<<16, 11)
	s := openStore(t, Options{})
	record(t, s, e, fast)
	e.churn(400, 6000)
	waitRecorded(t, s, e.feed.LastSeq())
	all := allPages(t, s, Query{Limit: MaxLimit})
	if len(all) < 6000 {
		t.Fatalf("recorded %d events, want at least 6,000", len(all))
	}
	return s, e, all
}

// concerns is the oracle of the object filters: the objects a record concerns.
func concerns(r *Record, identity map[types.UID]gc.ObjectRef) []gc.ObjectRef {
	refs, uids := refsOf(&r.Event, nil, nil)
	for _, u := range uids {
		ref, ok := identity[types.UID(u)]
		if !ok {
			ref = gc.ObjectRef{UID: types.UID(u)}
		}
		refs = append(refs, ref)
	}
	return refs
}

func oracle(all []Record, identity map[types.UID]gc.ObjectRef, q Query) []Record {
	in := func(list []string, v string, fold bool) bool {
		return len(list) == 0 || slices.ContainsFunc(list, func(w string) bool { return w == v || fold && strings.EqualFold(w, v) })
	}
	var out []Record
	for _, r := range all {
		typ, queue, verb, op, result := wordsOf(&r.Event)
		if !in(q.Types, typ, false) || !in(q.Queues, queue, false) || !in(q.Verbs, verb, false) || !in(q.Ops, op, false) || !in(q.Results, result, false) {
			continue
		}
		if !q.From.IsZero() && r.Time.Before(q.From) || !q.To.IsZero() && !r.Time.Before(q.To) {
			continue
		}
		if (len(q.UIDs)+len(q.Names)+len(q.Namespaces)+len(q.Kinds) > 0 || q.NameContains != "") && !slices.ContainsFunc(concerns(&r, identity), func(o gc.ObjectRef) bool {
			return (q.Visible == nil || q.Visible(o)) && in(q.UIDs, string(o.UID), false) && in(q.Names, o.Name, false) && in(q.Namespaces, o.Namespace, false) && in(q.Kinds, o.Kind, true) &&
				strings.Contains(strings.ToLower(o.Name), strings.ToLower(q.NameContains))
		}) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func TestQueryFiltersAsTheyAreDocumented(t *testing.T) {
	s, _, all := recorded(t)
	identity := map[types.UID]gc.ObjectRef{}
	var pod, owner gc.ObjectRef
	for _, r := range all {
		if r.Node != nil {
			identity[r.Node.UID] = r.Node.ObjectRef
			if r.Node.Kind == "Pod" && pod.UID == "" && r.Type == gc.NodeRemoved {
				pod = r.Node.ObjectRef
				owner = identity[r.Node.Owners[0].UID]
			}
		}
	}
	mid, late := all[len(all)/3].Time, all[2*len(all)/3].Time
	for name, q := range map[string]Query{
		"verb":                           {Verbs: []string{"delete"}},
		"result error":                   {Results: []string{"error"}},
		"queue and op":                   {Queues: []string{"attemptToDelete"}, Ops: []string{"taken", "addedAfter"}},
		"type":                           {Types: []string{"nodeRemoved", "edgeRemoved"}},
		"kind, any case":                 {Kinds: []string{"pod"}, Types: []string{"nodeAdded"}},
		"namespace":                      {Namespaces: []string{pod.Namespace}, Verbs: []string{"delete"}},
		"name":                           {Names: []string{pod.Name}},
		"part of a name, any case":       {NameContains: strings.ToUpper(pod.Name[len(pod.Name)/3 : 2*len(pod.Name)/3])},
		"a LIKE wildcard is a character": {NameContains: "%"},
		"owner uid":                      {UIDs: []string{string(owner.UID)}},
		"time range":                     {From: mid, To: late, Types: []string{"action"}},
		"everything at once":             {From: mid, Kinds: []string{"Pod"}, Namespaces: []string{pod.Namespace}, Queues: []string{"attemptToDelete"}, Results: []string{"ok"}},
		"nothing matches":                {Names: []string{"no-such-object"}},
	} {
		t.Run(name, func(t *testing.T) {
			want := oracle(all, identity, q)
			if name != "nothing matches" && name != "a LIKE wildcard is a character" && len(want) == 0 {
				t.Fatal("the oracle selects nothing: the case tests nothing")
			}
			q.Limit = MaxLimit
			got := allPages(t, s, q)
			if g, w := jsonOf(t, positions(got)), jsonOf(t, positions(want)); g != w {
				t.Fatalf("selected %d events, want %d:\n got %.400s\nwant %.400s", len(got), len(want), g, w)
			}
		})
	}
	// The owner's uid finds the look-ups made of it for its dependents, and the edges
	// naming it, not only its own events.
	byOwner := oracle(all, identity, Query{UIDs: []string{string(owner.UID)}})
	if !slices.ContainsFunc(byOwner, func(r Record) bool { return r.Type == gc.EdgeRemoved }) ||
		!slices.ContainsFunc(byOwner, func(r Record) bool { return r.Action != nil && r.Action.For != nil }) {
		t.Fatal("the owner's events hold no edge or look-up: the case tests less than it says")
	}
}

func positions(rs []Record) []int64 {
	out := []int64{}
	for _, r := range rs {
		out = append(out, r.Pos)
	}
	return out
}

func TestQueryPagesBothWays(t *testing.T) {
	s, _, all := recorded(t)
	q := Query{Types: []string{"action"}, Limit: 7}
	want := oracle(all, nil, q)
	asc := allPages(t, s, q)
	if jsonOf(t, asc) != jsonOf(t, want) {
		t.Fatalf("oldest first in pages of 7: %d events, want %d", len(asc), len(want))
	}
	q.Newest = true
	desc := allPages(t, s, q)
	slices.Reverse(desc)
	if jsonOf(t, desc) != jsonOf(t, want) {
		t.Fatalf("newest first in pages of 7: %d events, not the same in reverse", len(desc))
	}
	p, err := s.Query(context.Background(), Query{Newest: true, Limit: 1})
	if err != nil || len(p.Events) != 1 || p.Events[0].Pos != all[len(all)-1].Pos {
		t.Fatalf("the newest event: %v, %v", p.Events, err)
	}
	if jsonOf(t, p.Events[0]) != jsonOf(t, all[len(all)-1]) {
		t.Fatal("the same event reads differently newest first")
	}
}

func TestQueryLeavesOutWhatTheReaderMayNotSee(t *testing.T) {
	s, _, all := recorded(t)
	noPods := func(r gc.ObjectRef) bool { return r.Kind != "Pod" }
	got := allPages(t, s, Query{Limit: MaxLimit, Visible: noPods})
	redacted := 0
	for _, r := range got {
		if r.Object != nil && r.Object.Kind == "Pod" {
			t.Fatalf("a Pod's event was shown: %s", jsonOf(t, r))
		}
		if r.Action != nil && r.Action.For != nil && r.Action.For.Kind == "Pod" {
			t.Fatalf("an action names a Pod: %s", jsonOf(t, r))
		}
		if r.Action != nil && strings.Contains(r.Action.Reason, "an object you may not see") {
			redacted++
		}
	}
	if redacted == 0 {
		t.Fatal("no owner look-up made for a Pod was kept and redacted: the test tests less than it says")
	}
	if len(got) == 0 || len(got) >= len(all) {
		t.Fatalf("%d of %d events shown", len(got), len(all))
	}
}

// TestQueryNeverMatchesThroughAHiddenObject: a filter matches an event only through an
// object the reader may see. A trial found a search for an owner in a namespace the reader
// may not see (its namespace, name, uid, part of its name) matching the edges of the
// reader's own dependents that name it: the hidden name could be read a letter at a time.
func TestQueryNeverMatchesThroughAHiddenObject(t *testing.T) {
	s, _, all := recorded(t)
	identity := map[types.UID]gc.ObjectRef{}
	var owner gc.ObjectRef
	for _, r := range all {
		if r.Node != nil {
			identity[r.Node.UID] = r.Node.ObjectRef
		}
		if r.Edge != nil && owner.UID == "" {
			owner = identity[r.Edge.Owner]
		}
	}
	if owner.Name == "" {
		t.Fatal("no edge to a known owner was recorded: the test tests nothing")
	}
	visible := func(r gc.ObjectRef) bool { return r.UID != owner.UID }
	seen := allPages(t, s, Query{Limit: MaxLimit, Visible: visible})
	for name, q := range map[string]Query{
		"its uid":                {UIDs: []string{string(owner.UID)}},
		"its name":               {Names: []string{owner.Name}},
		"its name, as a search":  {NameContains: owner.Name},
		"its kind and namespace": {Kinds: []string{owner.Kind}, Namespaces: []string{owner.Namespace}},
	} {
		t.Run(name, func(t *testing.T) {
			if leak := oracle(seen, identity, q); !slices.ContainsFunc(leak, func(r Record) bool { return r.Edge != nil }) {
				t.Fatal("no edge the reader sees names the owner: the case tests nothing")
			}
			q.Visible, q.Limit = visible, MaxLimit
			want := oracle(seen, identity, q)
			got := allPages(t, s, q)
			if g, w := jsonOf(t, positions(got)), jsonOf(t, positions(want)); g != w {
				t.Fatalf("selected %d events, want %d (only through objects the reader sees):\n got %.400s\nwant %.400s", len(got), len(want), g, w)
			}
		})
	}
}

func TestQueryRefusesUnknownWords(t *testing.T) {
	s := openStore(t, Options{})
	_, err := s.Query(context.Background(), Query{Verbs: []string{"obliterate"}})
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Dim != "verb" || !slices.Contains(ve.Allowed, "delete") {
		t.Fatalf("an unknown verb: %v, want a ValueError listing the verbs", err)
	}
	if p, err := s.Query(context.Background(), Query{From: time.Now()}); err != nil || len(p.Events) != 0 || p.Events == nil {
		t.Fatalf("an empty recording: %+v, %v; want an empty (not null) page", p, err)
	}
}

func TestBlockKeysRoundTripAndRefuseDamage(t *testing.T) {
	var b block
	b.add(key{seq: 10, time: 1000, typ: 7, queue: 2, verb: 5, result: 1, objects: []int64{3, 9}}, []byte(`{"a":1}`))
	b.add(key{seq: 12, time: 990, typ: 1, objects: []int64{1 << 40}}, []byte(`{"b":2}`))
	enc := b.encodeKeys(nil)
	keys, err := decodeKeys(enc, b.firstSeq, b.firstTime)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[1].seq != 12 || keys[1].time != 990 || keys[0].verb != 5 || keys[1].objects[0] != 1<<40 || keys[0].bodyLen != 7 {
		t.Fatalf("decoded %+v", keys)
	}
	for n := range len(enc) {
		if _, err := decodeKeys(enc[:n], b.firstSeq, b.firstTime); !errors.Is(err, errCorrupt) {
			t.Fatalf("keys cut at %d of %d bytes: %v, want errCorrupt", n, len(enc), err)
		}
	}
	if b.mask&typeVocab.bit(7) == 0 || b.mask&verbVocab.bit(5) == 0 || b.mask&verbVocab.bit(4) != 0 {
		t.Fatalf("mask %b", b.mask)
	}
}

func TestVocabularyCodesAndMaskBits(t *testing.T) {
	// Every word of the engine has a code, and the dimensions fit one int64 mask apart.
	for _, c := range []struct {
		v     vocab
		words []string
	}{
		{typeVocab, words(gc.NodeAdded, gc.NodeUpdated, gc.NodeRemoved, gc.EdgeAdded, gc.EdgeRemoved, gc.QueueChange, gc.ActionTaken, gc.SyncChange, gc.ShadowChange)},
		{verbVocab, words(gc.VerbGet, gc.VerbKeep, gc.VerbRemoveRefs, gc.VerbUnblock, gc.VerbDelete, gc.VerbRemoveFinalizer, gc.VerbOrphan, gc.VerbWarn, gc.VerbRequeue)},
		{opVocab, words(gc.QueueAdded, gc.QueueAddedAfter, gc.QueueTaken, gc.QueueDone, gc.QueueForgotten)},
	} {
		for _, w := range c.words {
			if code := c.v.code(w); code == 0 || code == c.v.other() {
				t.Errorf("%s %q has no code", c.v.name, w)
			}
		}
	}
	last := resultVocab.base + uint(resultVocab.other())
	if last >= 63 {
		t.Fatalf("the block mask needs bit %d: more than an int64 holds", last)
	}
	for _, pair := range [][2]vocab{{typeVocab, queueVocab}, {queueVocab, verbVocab}, {verbVocab, opVocab}, {opVocab, resultVocab}} {
		if pair[0].base+uint(pair[0].other()) >= pair[1].base {
			t.Fatalf("%s's bits run into %s's", pair[0].name, pair[1].name)
		}
	}
}

package history

import (
	"slices"

	"github.com/gcscope/gcscope/gc"
)

// Every recorded event has a key: the words a query filters on (type, queue, verb, queue
// op, result), each as a one-byte code from a fixed vocabulary, and the objects it
// concerns. A block of events carries the union of its events' words as a bit mask, so
// that a query skips blocks that cannot match without reading them.

// vocab is one filterable dimension: its known words, coded 1..len(words); 0 is "none"
// and other is a word this version does not know (a newer engine's).
type vocab struct {
	name  string
	words []string
	base  uint // the dimension's first bit in a block mask
}

// The dimensions, their words and their bits in the mask (49 of 63). The codes are
// stored on disk: a dimension's words are append-only, never moved or removed
// (vocab_test.go pins each one). Every type of gc.EventTypes must have its code: a new
// type is appended to typeVocab; a dimension's codes (its "other" one included) must
// keep their bits below the next dimension's (vocab_test.go checks that too).
var (
	typeVocab = vocab{name: "type", base: 0, words: words(
		gc.NodeAdded, gc.NodeUpdated, gc.NodeRemoved, gc.EdgeAdded, gc.EdgeRemoved,
		gc.QueueChange, gc.ActionTaken, gc.SyncChange, gc.ShadowChange)}
	queueVocab = vocab{name: "queue", base: 12, words: words(gc.GraphChanges, gc.AttemptToDelete, gc.AttemptToOrphan)}
	verbVocab  = vocab{name: "verb", base: 17, words: words(
		gc.VerbGet, gc.VerbKeep, gc.VerbRemoveRefs, gc.VerbUnblock, gc.VerbDelete,
		gc.VerbRemoveFinalizer, gc.VerbOrphan, gc.VerbWarn, gc.VerbRequeue)}
	opVocab = vocab{name: "op", base: 29, words: words(
		gc.QueueAdded, gc.QueueAddedAfter, gc.QueueTaken, gc.QueueDone, gc.QueueForgotten)}
	resultVocab = vocab{name: "result", base: 37, words: append(append([]string{resultOK, resultError, resultShadow}, words(
		gc.ShadowPending, gc.ShadowOverdue, gc.ShadowConfirmed, gc.ShadowDiverged, gc.ShadowWithdrawn)...), resultRetry)}
)

// An action's result, as the engine's gcscope_gc_actions_total metric says it, but for a
// conflict (409: another writer changed the object first), which the worker retries as
// upstream's does: a retry, not a failure. A shadow decision's result is its outcome.
const (
	resultOK     = "ok"
	resultError  = "error"
	resultShadow = "shadow"
	resultRetry  = "retry"
)

func words[T ~string](ws ...T) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = string(w)
	}
	return out
}

// other is the code of a word the vocabulary does not know.
func (v vocab) other() byte { return byte(len(v.words) + 1) }

// code is w's code: 0 for no word.
func (v vocab) code(w string) byte {
	if w == "" {
		return 0
	}
	if i := slices.Index(v.words, w); i >= 0 {
		return byte(i + 1)
	}
	return v.other()
}

// word is the word of code c ("" for none or other).
func (v vocab) word(c byte) string {
	if c == 0 || int(c) > len(v.words) {
		return ""
	}
	return v.words[c-1]
}

// bit is code c's bit in a block mask (0 for none).
func (v vocab) bit(c byte) uint64 {
	if c == 0 {
		return 0
	}
	return 1 << (v.base + uint(c))
}

// The codes a timeline counts by.
var (
	deleteCode = verbVocab.code(string(gc.VerbDelete))
	okCode     = resultVocab.code(resultOK)
	shadowCode = resultVocab.code(resultShadow)
	errorCode  = resultVocab.code(resultError)
	retryCode  = resultVocab.code(resultRetry)
)

// key is what a query filters one event on.
type key struct {
	seq    uint64
	time   int64 // unix nanoseconds
	typ    byte
	queue  byte
	verb   byte
	op     byte
	result byte
	// objects are the ids (in the objects table) of the objects the event concerns, the
	// one it is about first (0 when it is about none).
	objects []int64
	// bodyLen is the length of the event's JSON in the block's body.
	bodyLen int
	// cascade is the id of the cascade the event belongs to (0: none).
	cascade int64
}

func (k *key) mask() uint64 {
	return typeVocab.bit(k.typ) | queueVocab.bit(k.queue) | verbVocab.bit(k.verb) | opVocab.bit(k.op) | resultVocab.bit(k.result)
}

// wordsOf are an event's words.
func wordsOf(e *gc.Event) (typ, queue, verb, op, result string) {
	typ = string(e.Type)
	switch {
	case e.Queue != nil:
		queue, op = string(e.Queue.Queue), string(e.Queue.Op)
	case e.Action != nil:
		queue, verb = string(e.Action.Queue), string(e.Action.Verb)
		switch {
		case retried(e.Action):
			result = resultRetry
		case e.Action.Error != "":
			result = resultError
		case e.Action.Shadow:
			result = resultShadow
		default:
			result = resultOK
		}
	case e.Shadow != nil:
		queue, verb, result = string(e.Shadow.Action.Queue), string(e.Shadow.Action.Verb), string(e.Shadow.Outcome)
	}
	return
}

// retried: a's call failed with a conflict, which the worker retries.
func retried(a *gc.Action) bool { return a.Error != "" && a.ErrorReason == "Conflict" }

// refsOf are the objects an event concerns, the one it is about first; uids are those
// named only by uid (an edge's ends, the owners a patch touches). It appends to refs and
// uids.
func refsOf(e *gc.Event, refs []gc.ObjectRef, uids []string) ([]gc.ObjectRef, []string) {
	action := func(a *gc.Action) {
		refs = append(refs, a.Object)
		if a.For != nil {
			refs = append(refs, *a.For)
		}
		for _, u := range a.Refs {
			uids = append(uids, string(u))
		}
	}
	switch {
	case e.Node != nil:
		refs = append(refs, e.Node.ObjectRef)
	case e.Edge != nil:
		uids = append(uids, string(e.Edge.Dependent), string(e.Edge.Owner))
	case e.Queue != nil:
		refs = append(refs, e.Queue.Object)
	case e.Action != nil:
		action(e.Action)
	case e.Shadow != nil:
		action(&e.Shadow.Action)
	}
	return refs, uids
}

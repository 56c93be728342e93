// Package deletion explains the deletions the garbage collector does not own alone: a
// namespace the namespace controller is emptying (its spec.finalizers, its conditions,
// the content left and what holds it), a finalizer another controller added (who added
// it, from the object's managedFields, and whether that controller looks alive), an API
// group discovery cannot read (the APIService at fault, its Service and endpoints), and
// the cluster-wide list of what is stuck.
//
// It reads the engine's graph through gc's exported read API and asks the apiserver only
// on demand (one explanation, one stuck list): nothing here is kept in the informers'
// cache. Every answer takes a visible function (nil: all) and leaves out, and counts,
// what its reader may not see.
package deletion

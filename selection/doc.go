// Package selection resolves the deletes people make as sets to the live objects they
// name, as the tool that makes each would: kubectl delete -l (a label selector over
// types), kubectl delete -f (manifests), helm uninstall (a release's manifest, read from
// Helm's own storage, its keep policy and hooks) and the delete of an Argo CD
// Application (its tracked resources, through its resources finalizer). What a set names
// but the cluster does not hold is said per entry, never dropped.
//
// Reads are made with the credentials of the Source (the user's, when impersonated) and
// bounded: names of one resource in one namespace are read with one LIST past a few, not
// a GET each.
package selection

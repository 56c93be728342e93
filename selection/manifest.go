package selection

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gcscope/gcscope/gc"
)

// MaxManifestBytes bounds the manifests one set reads (all files together).
const MaxManifestBytes = 32 << 20

// Document is one object a manifest declares.
type Document struct {
	gc.ObjectRef
	Annotations map[string]string
	// Source says where it was declared ("web.yaml, document 3").
	Source string
}

// ParseManifest reads the objects declared in YAML or JSON documents (separated by
// ---; a List's items each count), as kubectl delete -f reads them. source names the
// input in errors.
func ParseManifest(data []byte, source string) ([]Document, error) {
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d MiB read", source, len(data), MaxManifestBytes>>20)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Document
	for n := 1; ; n++ {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		where := fmt.Sprintf("%s, document %d", source, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		if len(u.Object) == 0 {
			continue // an empty document, as between two ---
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: no apiVersion or kind: not a Kubernetes object", where)
		}
		if u.IsList() {
			err := u.EachListItem(func(item runtime.Object) error {
				it := item.(*unstructured.Unstructured)
				out = append(out, document(it, where))
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
		} else {
			out = append(out, document(&u, where))
		}
		if len(out) > MaxObjects {
			return nil, tooMany(len(out), source)
		}
	}
}

func document(u *unstructured.Unstructured, where string) Document {
	return Document{ObjectRef: gc.ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()},
		Annotations: u.GetAnnotations(), Source: where}
}

// Manifest resolves the documents to the live objects kubectl delete -f would delete:
// each in its own namespace, or the Source's; a document the cluster does not hold is
// missing ("not found", as kubectl says per document). describe names the delete.
func (s *Source) Manifest(ctx context.Context, docs []Document, describe string) (Set, error) {
	if len(docs) > MaxObjects {
		return Set{}, tooMany(len(docs), describe)
	}
	entries := make([]*entry, len(docs))
	for i, d := range docs {
		entries[i] = &entry{ref: d.ObjectRef, where: d.Source}
	}
	if err := s.resolve(ctx, entries); err != nil {
		return Set{}, err
	}
	set := Set{Describe: describe}
	collect(&set, entries)
	return set, nil
}

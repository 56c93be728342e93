package web_test

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// BenchmarkSnapshotShapes: what other JSON shapes of the 150k snapshot's nodes would
// weigh, raw and deflated as permessage-deflate deflates (flate level 1), and what they
// cost to encode and deflate (ns/op). Only "nodes" is what the stream sends; the others
// are what-ifs the page cannot read today:
//
//   - nodes: []gc.NodeState, as the stream sends it;
//   - owners-by-uid: an owner that is in the snapshot is named by its uid (and the flags)
//     alone, since its own node carries its apiVersion, kind and name;
//   - columnar: each node an array [type, namespace, name, uid, flags, owners...], types
//     (apiVersion and kind) and namespaces as indexes into tables, owners in the snapshot
//     as indexes of their nodes.
func BenchmarkSnapshotShapes(b *testing.B) {
	g := buildGraph(snapshotObjects)
	eng := newSynthEngine()
	eng.load(g)
	nodes := eng.Snapshot().Nodes
	for _, s := range []struct {
		name   string
		encode func([]gc.NodeState) ([]byte, error)
	}{
		{"nodes", func(n []gc.NodeState) ([]byte, error) { return json.Marshal(n) }},
		{"owners-by-uid", ownersByUID},
		{"columnar", columnar},
	} {
		b.Run(s.name, func(b *testing.B) {
			var raw, deflated int
			for b.Loop() {
				data, err := s.encode(nodes)
				if err != nil {
					b.Fatal(err)
				}
				var buf bytes.Buffer
				w, _ := flate.NewWriter(&buf, flate.BestSpeed)
				w.Write(data)
				w.Close()
				raw, deflated = len(data), buf.Len()
			}
			b.ReportMetric(float64(raw)/(1<<20), "raw-MiB")
			b.ReportMetric(float64(deflated)/(1<<20), "deflated-MiB")
			b.ReportMetric(float64(deflated)/float64(len(nodes)), "deflated-B/object")
		})
	}
}

// ownersByUID encodes nodes with the owners in the snapshot named by uid only.
func ownersByUID(nodes []gc.NodeState) ([]byte, error) {
	type owner struct {
		APIVersion         string    `json:"apiVersion,omitempty"`
		Kind               string    `json:"kind,omitempty"`
		Name               string    `json:"name,omitempty"`
		UID                types.UID `json:"uid"`
		Controller         bool      `json:"controller,omitempty"`
		BlockOwnerDeletion bool      `json:"blockOwnerDeletion,omitempty"`
	}
	type node struct {
		gc.NodeState
		Owners []owner `json:"owners,omitempty"`
	}
	present := make(map[types.UID]bool, len(nodes))
	for _, n := range nodes {
		present[n.UID] = true
	}
	out := make([]node, len(nodes))
	for i, n := range nodes {
		out[i].NodeState = n
		for _, o := range n.Owners {
			w := owner{UID: o.UID, Controller: o.Controller, BlockOwnerDeletion: o.BlockOwnerDeletion}
			if !present[o.UID] {
				w.APIVersion, w.Kind, w.Name = o.APIVersion, o.Kind, o.Name
			}
			out[i].Owners = append(out[i].Owners, w)
		}
	}
	return json.Marshal(out)
}

// columnar encodes nodes as arrays over tables of types and namespaces.
func columnar(nodes []gc.NodeState) ([]byte, error) {
	var doc struct {
		Types      []string `json:"types"`
		Namespaces []string `json:"namespaces"`
		Nodes      [][]any  `json:"nodes"`
	}
	typeIdx, nsIdx := map[string]int{}, map[string]int{}
	intern := func(table *[]string, idx map[string]int, s string) int {
		i, ok := idx[s]
		if !ok {
			i = len(*table)
			idx[s] = i
			*table = append(*table, s)
		}
		return i
	}
	pos := make(map[types.UID]int, len(nodes))
	for i, n := range nodes {
		pos[n.UID] = i
	}
	for _, n := range nodes {
		flags := 0
		for bit, set := range []bool{n.BeingDeleted, n.DeletingDependents, n.Virtual, n.Observed} {
			if set {
				flags |= 1 << bit
			}
		}
		row := []any{intern(&doc.Types, typeIdx, n.APIVersion+"/"+n.Kind), intern(&doc.Namespaces, nsIdx, n.Namespace), n.Name, n.UID, flags}
		for _, o := range n.Owners {
			of := 0
			if o.Controller {
				of |= 1
			}
			if o.BlockOwnerDeletion {
				of |= 2
			}
			if p, ok := pos[o.UID]; ok {
				row = append(row, []int{p, of})
			} else {
				row = append(row, []any{o.APIVersion, o.Kind, o.Name, o.UID, of})
			}
		}
		if len(n.Finalizers) > 0 || n.DeletionTimestamp != nil {
			row = append(row, map[string]any{"finalizers": n.Finalizers, "deletionTimestamp": n.DeletionTimestamp})
		}
		doc.Nodes = append(doc.Nodes, row)
	}
	return json.Marshal(doc)
}

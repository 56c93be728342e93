package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// Reading the DOT that the Export menu saves: a parser of the DOT language's grammar
// for a digraph, enough to check what the export holds.

// checkDOT: a digraph that parses, with a vertex for each object of want (its kind,
// namespace and name as attributes) and an edge dependent -> owner for each of their
// ownerReferences to another of them, and nothing else.
func checkDOT(t *testing.T, data []byte, want graphDoc) {
	t.Helper()
	g, err := parseDOTGraph(string(data))
	if err != nil {
		t.Errorf("dot: %v\n%s", err, data)
		return
	}
	got := slices.Sorted(maps.Keys(g.vertices))
	if !slices.Equal(got, want.uids()) {
		t.Errorf("dot: %d vertices, want the %d objects: only in the DOT %v, missing %v", len(got), len(want.Nodes), minus(got, want.uids()), minus(want.uids(), got))
	}
	in := map[string]bool{}
	for _, n := range want.Nodes {
		in[n.UID] = true
	}
	var wantEdges [][2]string
	for _, n := range want.Nodes {
		if v, ok := g.vertices[n.UID]; ok && (v["kind"] != n.Kind || v["namespace"] != n.Namespace || v["name"] != n.Name || v["uid"] != n.UID) {
			t.Errorf("dot: vertex %s has %v; want kind %s, namespace %s, name %s", n.UID, v, n.Kind, n.Namespace, n.Name)
		}
		for _, o := range n.Owners {
			if in[o.UID] {
				wantEdges = append(wantEdges, [2]string{n.UID, o.UID})
			}
		}
	}
	edges := slices.Clone(g.edges)
	cmp := func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) }
	slices.SortFunc(edges, cmp)
	slices.SortFunc(wantEdges, cmp)
	if !slices.Equal(edges, wantEdges) || len(wantEdges) == 0 {
		t.Errorf("dot: edges %v; want one dependent -> owner per ownerReference: %v", edges, wantEdges)
	}
}

// dotGraph is what parseDOTGraph read: vertices (id → attributes) and edges.
type dotGraph struct {
	vertices map[string]map[string]string
	edges    [][2]string
}

// parseDOTGraph parses the DOT language's grammar for a digraph, as far as gcscope's
// export uses it: `[strict] digraph [ID] { stmt* }`, where a statement is a node
// (`ID [attr=value ...]`) or an edge (`ID -> ID [attrs]`), IDs plain or quoted.
func parseDOTGraph(src string) (*dotGraph, error) {
	toks, err := dotTokens(src)
	if err != nil {
		return nil, err
	}
	i := 0
	peek := func() string {
		if i < len(toks) {
			return toks[i]
		}
		return ""
	}
	expect := func(want string) error {
		if peek() != want {
			return fmt.Errorf("token %d: %q, want %q", i, peek(), want)
		}
		i++
		return nil
	}
	isID := func(s string) bool { return s != "" && !strings.Contains("{}[]=;,", s) && s != "->" }
	unquote := func(s string) string {
		if strings.HasPrefix(s, `"`) {
			return strings.ReplaceAll(s[1:len(s)-1], `\"`, `"`)
		}
		return s
	}
	if peek() == "strict" {
		i++
	}
	if err := expect("digraph"); err != nil {
		return nil, err
	}
	if isID(peek()) {
		i++
	}
	if err := expect("{"); err != nil {
		return nil, err
	}
	g := &dotGraph{vertices: map[string]map[string]string{}}
	for peek() != "}" {
		if !isID(peek()) {
			return nil, fmt.Errorf("token %d: %q, want a statement", i, peek())
		}
		a := unquote(toks[i])
		i++
		attrs := map[string]string{}
		var b string
		edge := peek() == "->"
		if edge {
			i++
			if !isID(peek()) {
				return nil, fmt.Errorf("token %d: %q, want the head of an edge", i, peek())
			}
			b = unquote(toks[i])
			i++
		}
		if peek() == "[" {
			i++
			for peek() != "]" {
				k := peek()
				if !isID(k) {
					return nil, fmt.Errorf("token %d: %q, want an attribute", i, k)
				}
				i++
				if err := expect("="); err != nil {
					return nil, err
				}
				if !isID(peek()) {
					return nil, fmt.Errorf("token %d: %q, want a value", i, peek())
				}
				attrs[unquote(k)] = unquote(toks[i])
				i++
				if peek() == "," || peek() == ";" {
					i++
				}
			}
			i++
		}
		if peek() == ";" {
			i++
		}
		if edge {
			g.edges = append(g.edges, [2]string{a, b})
		} else {
			if _, dup := g.vertices[a]; dup {
				return nil, fmt.Errorf("vertex %q twice", a)
			}
			g.vertices[a] = attrs
		}
	}
	i++
	if i != len(toks) {
		return nil, fmt.Errorf("%d tokens after the graph's closing brace", len(toks)-i)
	}
	return g, nil
}

// dotTokens splits DOT source into tokens: punctuation, ->, plain IDs and quoted strings
// (with their quotes).
func dotTokens(src string) ([]string, error) {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.IndexByte("{}[]=;,", c) >= 0:
			toks = append(toks, string(c))
			i++
		case strings.HasPrefix(src[i:], "->"):
			toks = append(toks, "->")
			i += 2
		case c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			if j >= len(src) {
				return nil, fmt.Errorf("offset %d: unterminated string", i)
			}
			toks = append(toks, src[i:j+1])
			i = j + 1
		case c == '_' || c == '.' || c == '-' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '.' || ('0' <= src[j] && src[j] <= '9') || ('a' <= src[j] && src[j] <= 'z') || ('A' <= src[j] && src[j] <= 'Z')) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("offset %d: unexpected %q", i, c)
			}
			toks = append(toks, src[i:j])
			i = j
		default:
			return nil, fmt.Errorf("offset %d: unexpected %q", i, c)
		}
	}
	return toks, nil
}

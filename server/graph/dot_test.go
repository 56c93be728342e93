package graph

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the current output")

// dotFixture is a small cluster, listed out of uid order:
//   - Deployment shop/web → ReplicaSet shop/web-5d8f → Pods shop/web-5d8f-{a,b}
//   - ConfigMap shop/frontend-config owned by a virtual App shop/frontend
//   - Secret shop/migrate-token and Pod shop/migrate-x owned by Job shop/migrate, which
//     is not in the graph (missing, drawn once for both)
//   - StatefulSet shop/db being deleted in the foreground (deletingDependents), Pod shop/db-0
//   - ConfigMap shop/kube-root-ca.crt with no owners and no dependents (left out)
//   - ConfigMap other/cross-ref naming Deployment shop/web as owner (cross-namespace)
//   - ClusterRole viewer (cluster-scoped) owning ClusterRoleBinding viewer and
//     RoleBinding shop/viewer
func dotFixture() []gc.NodeState {
	obj := func(apiVersion, kind, ns, name, uid string, owners ...gc.OwnerRef) gc.NodeState {
		return gc.NodeState{
			ObjectRef: gc.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name, UID: types.UID(uid)},
			Owners:    owners,
			Observed:  true,
		}
	}
	owner := func(apiVersion, kind, name, uid string) gc.OwnerRef {
		return gc.OwnerRef{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: true, BlockOwnerDeletion: true}
	}
	deploy := owner("apps/v1", "Deployment", "web", "deploy-web")
	rs := owner("apps/v1", "ReplicaSet", "web-5d8f", "rs-web")
	app := owner("example.com/v1alpha1", "App", "frontend", "app-frontend")
	job := owner("batch/v1", "Job", "migrate", "job-migrate")
	sts := owner("apps/v1", "StatefulSet", "db", "sts-db")
	role := owner("rbac.authorization.k8s.io/v1", "ClusterRole", "viewer", "clusterrole-viewer")
	role.Controller, role.BlockOwnerDeletion = false, false

	virtual := obj("example.com/v1alpha1", "App", "shop", "frontend", "app-frontend")
	virtual.Virtual, virtual.Observed = true, false
	deleting := obj("apps/v1", "StatefulSet", "shop", "db", "sts-db")
	deleting.BeingDeleted, deleting.DeletingDependents = true, true
	deleting.Finalizers = []string{"foregroundDeletion"}

	return []gc.NodeState{
		obj("v1", "Pod", "shop", "web-5d8f-b", "pod-web-b", rs),
		obj("apps/v1", "Deployment", "shop", "web", "deploy-web"),
		obj("v1", "ConfigMap", "shop", "kube-root-ca.crt", "cm-root-ca"),
		obj("apps/v1", "ReplicaSet", "shop", "web-5d8f", "rs-web", deploy),
		obj("v1", "Pod", "shop", "web-5d8f-a", "pod-web-a", rs),
		obj("v1", "ConfigMap", "shop", "frontend-config", "cm-frontend", app),
		virtual,
		obj("v1", "Secret", "shop", "migrate-token", "secret-token", job),
		obj("v1", "Pod", "shop", "migrate-x", "pod-migrate", job),
		obj("v1", "Pod", "shop", "db-0", "pod-db-0", sts),
		deleting,
		obj("v1", "ConfigMap", "other", "cross-ref", "cm-cross", deploy),
		obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "viewer", "crb-viewer", role),
		obj("rbac.authorization.k8s.io/v1", "RoleBinding", "shop", "viewer", "rb-viewer", role),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "viewer", "clusterrole-viewer"),
	}
}

func renderDOT(t *testing.T, nodes []gc.NodeState, uids ...types.UID) string {
	t.Helper()
	var b bytes.Buffer
	if err := writeDOT(&b, nodes, uids); err != nil {
		t.Fatalf("writeDOT: %v", err)
	}
	return b.String()
}

// TestDOTGolden pins the whole output; run with -update to rewrite testdata/*.dot.
func TestDOTGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		uids []types.UID
	}{
		{"full.dot", nil},
		{"closure.dot", []types.UID{"rs-web", "secret-token"}}, // ?uid=rs-web&uid=secret-token
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := renderDOT(t, dotFixture(), tc.uids...)
			checkDOTGolden(t, tc.file, got)
			g := parseDOT(t, got)
			checkGraphviz(t, got, len(g.vertices), len(g.edges))
		})
	}
}

// TestDOTUpstreamLayout pins upstream's layout independently of the golden files: the
// bytes below are what kube-controller-manager's marshalDOT writes for this graph.
func TestDOTUpstreamLayout(t *testing.T) {
	rs := gc.NodeState{
		ObjectRef: gc.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: "rs", UID: "b"},
		Owners:    []gc.OwnerRef{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "a"}},
	}
	pod := gc.NodeState{
		ObjectRef:    gc.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p", UID: "c"},
		Owners:       []gc.OwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "b"}},
		BeingDeleted: true,
	}
	want := `strict digraph full {
  // Node definitions.
  "a" [
    label="uid=a\nnamespace=\nDeployment.v1.apps/d\nmissingFromGraph\n"
    group="apps"
    version="v1"
    kind="Deployment"
    namespace=""
    name="d"
    uid="a"
    missing="true"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  "b" [
    label="uid=b\nnamespace=ns\nReplicaSet.v1.apps/rs\n"
    group="apps"
    version="v1"
    kind="ReplicaSet"
    namespace="ns"
    name="rs"
    uid="b"
    missing="false"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  "c" [
    label="uid=c\nnamespace=ns\nPod.v1/p\nbeingDeleted\n"
    group=""
    version="v1"
    kind="Pod"
    namespace="ns"
    name="p"
    uid="c"
    missing="false"
    beingDeleted="true"
    deletingDependents="false"
    virtual="false"
  ];
  // Edge definitions.
  "b" -> "a";
  "c" -> "b";
}
`
	if got := renderDOT(t, []gc.NodeState{pod, rs}); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	// No vertices: no section comments, as upstream's empty.dot.
	const empty = "strict digraph full {\n}\n"
	for name, nodes := range map[string][]gc.NodeState{
		"no nodes":      nil,
		"only isolated": {{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "x", UID: "x"}}},
	} {
		if got := renderDOT(t, nodes); got != empty {
			t.Errorf("%s: got %q, want %q", name, got, empty)
		}
	}
}

// TestDOTFormat checks the format rules on the fixture without the golden files:
// framing, sorting, edge syntax, no isolated vertices, a missing vertex for each unknown
// owner, and which objects the full graph and each ?uid= closure draw.
func TestDOTFormat(t *testing.T) {
	nodes := dotFixture()
	all := []string{
		"app-frontend", "clusterrole-viewer", "cm-cross", "cm-frontend", "crb-viewer", "deploy-web",
		"job-migrate", "pod-db-0", "pod-migrate", "pod-web-a", "pod-web-b", "rb-viewer", "rs-web",
		"secret-token", "sts-db",
	}
	for _, tc := range []struct {
		name string
		uids []types.UID
		want []string // vertex uids, sorted
	}{
		{"full", nil, all},
		{"deployment chain and missing owner", []types.UID{"rs-web", "secret-token"},
			[]string{"cm-cross", "deploy-web", "job-migrate", "pod-migrate", "pod-web-a", "pod-web-b", "rs-web", "secret-token"}},
		{"from the top owner", []types.UID{"deploy-web"},
			[]string{"cm-cross", "deploy-web", "pod-web-a", "pod-web-b", "rs-web"}},
		{"virtual owner", []types.UID{"app-frontend"}, []string{"app-frontend", "cm-frontend"}},
		{"foreground deletion", []types.UID{"pod-db-0"}, []string{"pod-db-0", "sts-db"}},
		{"cluster-scoped owner", []types.UID{"rb-viewer"}, []string{"clusterrole-viewer", "crb-viewer", "rb-viewer"}},
		{"duplicate and unknown uids", []types.UID{"sts-db", "nope", "sts-db"}, []string{"pod-db-0", "sts-db"}},
		{"isolated object", []types.UID{"cm-root-ca"}, nil},
		{"unknown uid", []types.UID{"nope"}, nil},
		{"missing owner is not in the graph", []types.UID{"job-migrate"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := renderDOT(t, nodes, tc.uids...)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if !strings.HasSuffix(out, "\n") || lines[0] != "strict digraph full {" || lines[len(lines)-1] != "}" {
				t.Fatalf("not framed by %q … %q:\n%s", "strict digraph full {", "}", out)
			}
			edgeLine := regexp.MustCompile(`^"[^"]+" -> "[^"]+";$`)
			for _, l := range lines {
				if strings.Contains(l, "->") && !edgeLine.MatchString(strings.TrimPrefix(l, "  ")) {
					t.Errorf("bad edge line %q", l)
				}
			}

			g := parseDOT(t, out)
			var ids []string
			for _, v := range g.vertices {
				ids = append(ids, v.id)
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("vertices\n got %q\nwant %q", ids, tc.want)
			}
			if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Errorf("vertices not sorted by uid or repeated: %q", ids)
			}
			if !slices.IsSortedFunc(g.edges, func(a, b [2]string) int {
				return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1])
			}) {
				t.Errorf("edges not sorted by (dependent, owner): %q", g.edges)
			}

			byUID := map[string]gc.NodeState{}
			for _, n := range nodes {
				byUID[string(n.UID)] = n
			}
			drawn := map[string]parsedVertex{}
			for _, v := range g.vertices {
				drawn[v.id] = v
			}
			linked := map[string]bool{}
			wantEdges := 0
			for _, e := range g.edges {
				linked[e[0]], linked[e[1]] = true, true
				if _, ok := drawn[e[0]]; !ok {
					t.Errorf("edge %q: dependent not drawn", e)
				}
				if _, ok := drawn[e[1]]; !ok {
					t.Errorf("edge %q: owner not drawn", e)
				}
			}
			for _, v := range g.vertices {
				if !linked[v.id] {
					t.Errorf("isolated vertex %q", v.id)
				}
				if v.attrs["uid"] != v.id || !strings.HasPrefix(v.attrs["label"], "uid="+v.id+"\nnamespace=") {
					t.Errorf("vertex %q: uid %q, label %q", v.id, v.attrs["uid"], v.attrs["label"])
				}
				n, known := byUID[v.id]
				if got, want := v.attrs["missing"], strconv.FormatBool(!known); got != want {
					t.Errorf("vertex %q: missing=%q, want %q", v.id, got, want)
				}
				if got, want := v.attrs["virtual"], strconv.FormatBool(n.Virtual); got != want {
					t.Errorf("vertex %q: virtual=%q, want %q", v.id, got, want)
				}
				wantEdges += len(n.Owners)
				for _, o := range n.Owners {
					if !slices.Contains(g.edges, [2]string{v.id, string(o.UID)}) {
						t.Errorf("no edge for ownerReference %q -> %q", v.id, o.UID)
					}
					if _, ok := byUID[string(o.UID)]; !ok {
						m := drawn[string(o.UID)]
						if m.attrs["missing"] != "true" || m.attrs["kind"] != o.Kind || m.attrs["name"] != o.Name {
							t.Errorf("unknown owner %q: drawn as %v", o.UID, m.attrs)
						}
					}
				}
			}
			if len(g.edges) != wantEdges {
				t.Errorf("%d edges, want one per ownerReference: %d", len(g.edges), wantEdges)
			}
			if _, ok := drawn["cm-root-ca"]; ok {
				t.Errorf("isolated object drawn")
			}
		})
	}
}

// TestDOTEscaping: names with quotes, backslashes, newlines and other oddities stay one
// DOT ID each, every line of the output keeps its form, and the values read back intact.
func TestDOTEscaping(t *testing.T) {
	weird := []string{
		"quote\"inside",
		`back\slash`,
		"trailing backslash\\",
		"new\nline",
		"crlf\r\nand\ttab",
		`escaped \"quote\" and \N \l \\`,
		"nul\x00 bell\a",
		"unicode Iñtërnâtiônàlizætiøn 🐹 \u2028",
		"invalid utf-8 \xff\xfe",
		`"`,
		`\`,
		`}; digraph evil { "x" -> "y`,
	}
	var nodes []gc.NodeState
	for i, s := range weird {
		id := types.UID(strconv.Itoa(i) + s)
		ownerID := types.UID(s + "-owner\"\\")
		nodes = append(nodes, gc.NodeState{
			ObjectRef: gc.ObjectRef{APIVersion: "g\"r\\p/v\n1", Kind: "K\"" + s, Namespace: "ns" + s, Name: s, UID: id},
			Owners:    []gc.OwnerRef{{APIVersion: "x/y/z", Kind: s, Name: s + "\n", UID: ownerID}},
		})
	}
	out := renderDOT(t, nodes)
	g := parseDOT(t, out) // fails on any line that is not one of the format's forms

	if want := 1 + 1 + 13*2*len(weird) + 1 + len(weird) + 1; strings.Count(out, "\n") != want {
		t.Errorf("%d lines, want %d: a value broke a line", strings.Count(out, "\n"), want)
	}
	drawn := map[string]parsedVertex{}
	for _, v := range g.vertices {
		drawn[v.id] = v
	}
	for _, n := range nodes {
		v, ok := drawn[string(n.UID)]
		if !ok {
			t.Errorf("vertex %q not drawn", n.UID)
			continue
		}
		for key, want := range map[string]string{"kind": n.Kind, "namespace": n.Namespace, "name": n.Name, "uid": string(n.UID)} {
			if v.attrs[key] != want {
				t.Errorf("vertex %q: %s=%q, want %q", n.UID, key, v.attrs[key], want)
			}
		}
		wantLabel := "uid=" + string(n.UID) + "\nnamespace=" + n.Namespace + "\n" + n.Kind + ".v\n1.g\"r\\p/" + n.Name + "\n"
		if v.attrs["label"] != wantLabel || v.attrs["group"] != "g\"r\\p" || v.attrs["version"] != "v\n1" {
			t.Errorf("vertex %q: label %q group %q version %q, want label %q", n.UID, v.attrs["label"], v.attrs["group"], v.attrs["version"], wantLabel)
		}
		// An apiVersion with two slashes does not parse: upstream draws it empty.
		o := n.Owners[0]
		m := drawn[string(o.UID)]
		wantLabel = "uid=" + string(o.UID) + "\nnamespace=\n" + o.Kind + "./" + o.Name + "\nmissingFromGraph\n"
		if m.attrs["missing"] != "true" || m.attrs["name"] != o.Name || m.attrs["kind"] != o.Kind ||
			m.attrs["group"] != "" || m.attrs["version"] != "" || m.attrs["label"] != wantLabel {
			t.Errorf("missing owner %q drawn as %q, want label %q", o.UID, m.attrs, wantLabel)
		}
		if !slices.Contains(g.edges, [2]string{string(n.UID), string(o.UID)}) {
			t.Errorf("no edge %q -> %q", n.UID, o.UID)
		}
	}
	checkDOTGolden(t, "escaping.dot", out)
	checkGraphviz(t, out, len(g.vertices), len(g.edges))
}

// checkGraphviz renders out with `dot -Tsvg` and checks Graphviz reads exactly the
// vertices and edges we meant. Graphviz is optional: where `dot` is not on PATH
// (apt-get install graphviz) the check is logged as not done and the test relies on
// parseDOT alone.
func checkGraphviz(t *testing.T, out string, vertices, edges int) {
	t.Helper()
	path, err := exec.LookPath("dot")
	if err != nil {
		t.Log("graphviz `dot` not on PATH: output not rendered with dot -Tsvg")
		return
	}
	cmd := exec.Command(path, "-Tsvg")
	cmd.Stdin = strings.NewReader(out)
	var svg, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &svg, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dot -Tsvg: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("dot -Tsvg complained:\n%s", stderr.String())
	}
	if n := strings.Count(svg.String(), `class="node"`); n != vertices {
		t.Errorf("graphviz drew %d nodes, want %d", n, vertices)
	}
	if n := strings.Count(svg.String(), `class="edge"`); n != edges {
		t.Errorf("graphviz drew %d edges, want %d", n, edges)
	}
}

func checkDOTGolden(t *testing.T, file, got string) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./server -run TestDOT -update to create it)", err)
	}
	if got == string(want) {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s differs at line %d:\n got %q\nwant %q\n(run with -update to accept)\nfull output:\n%s", path, i+1, gl, wl, got)
		}
	}
}

type parsedVertex struct {
	id    string
	attrs map[string]string // unquoted values
}

type parsedDOT struct {
	vertices []parsedVertex // in output order
	edges    [][2]string    // dependent, owner, unquoted, in output order
}

// parseDOT reads writeDOT's output strictly: every line must be one of the format's
// forms and every quoted string a complete, valid one; the test fails otherwise.
func parseDOT(t *testing.T, out string) parsedDOT {
	t.Helper()
	const quoted = `("(?:[^"\\\n]|\\.)*")`
	var (
		vertexStart = regexp.MustCompile(`^  ` + quoted + ` \[$`)
		attr        = regexp.MustCompile(`^    ([A-Za-z]+)=` + quoted + `$`)
		edge        = regexp.MustCompile(`^  ` + quoted + ` -> ` + quoted + `;$`)
		attrOrder   = []string{"label", "group", "version", "kind", "namespace", "name", "uid", "missing", "beingDeleted", "deletingDependents", "virtual"}
	)
	unquote := func(line int, s string) string {
		u, err := strconv.Unquote(s)
		if err != nil {
			t.Fatalf("line %d: %s is not a valid quoted string: %v", line, s, err)
		}
		return u
	}
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("output does not end with a newline: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 2 || lines[0] != "strict digraph full {" || lines[len(lines)-1] != "}" {
		t.Fatalf("not framed by `strict digraph full {` … `}`:\n%s", out)
	}
	var g parsedDOT
	nodesHeader, edgesHeader := false, false
	for i := 1; i < len(lines)-1; i++ {
		l := lines[i]
		switch {
		case l == "  // Node definitions.":
			if i != 1 {
				t.Fatalf("line %d: node section header out of place", i+1)
			}
			nodesHeader = true
		case l == "  // Edge definitions.":
			if edgesHeader || len(g.edges) > 0 {
				t.Fatalf("line %d: edge section header out of place", i+1)
			}
			edgesHeader = true
		case vertexStart.MatchString(l):
			if !nodesHeader || edgesHeader {
				t.Fatalf("line %d: vertex outside the node section", i+1)
			}
			v := parsedVertex{id: unquote(i+1, vertexStart.FindStringSubmatch(l)[1]), attrs: map[string]string{}}
			for _, key := range attrOrder {
				i++
				m := attr.FindStringSubmatch(lines[i])
				if m == nil || m[1] != key {
					t.Fatalf("line %d: want attribute %s, got %q", i+1, key, lines[i])
				}
				v.attrs[key] = unquote(i+1, m[2])
			}
			if i++; lines[i] != "  ];" {
				t.Fatalf("line %d: want `  ];`, got %q", i+1, lines[i])
			}
			g.vertices = append(g.vertices, v)
		case edge.MatchString(l):
			if !edgesHeader {
				t.Fatalf("line %d: edge outside the edge section", i+1)
			}
			m := edge.FindStringSubmatch(l)
			g.edges = append(g.edges, [2]string{unquote(i+1, m[1]), unquote(i+1, m[2])})
		default:
			t.Fatalf("line %d: unexpected %q", i+1, l)
		}
	}
	if nodesHeader != (len(g.vertices) > 0) || edgesHeader != (len(g.edges) > 0) {
		t.Fatalf("section headers without entries (or entries without headers):\n%s", out)
	}
	return g
}

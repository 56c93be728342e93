package httpapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestErrorCodesDocumented: every code of Codes is in docs/api.md's table of error codes,
// and every code of that table is in Codes.
func TestErrorCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedErrorCodes(string(doc))
	if len(documented) == 0 {
		t.Fatal("docs/api.md has no table of error codes after \"`error` is one of\"")
	}
	for _, c := range Codes {
		if !slices.Contains(documented, string(c)) {
			t.Errorf("error code %q is not documented in docs/api.md", c)
		}
	}
	for _, d := range documented {
		if !slices.Contains(Codes, Code(d)) {
			t.Errorf("docs/api.md documents error code %q, which Codes does not list", d)
		}
	}
}

// documentedErrorCodes reads the first column of the table that follows the line
// starting "`error` is one of".
func documentedErrorCodes(doc string) []string {
	at := strings.Index(doc, "`error` is one of")
	if at < 0 {
		return nil
	}
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\|")
	var codes []string
	inTable := false
	for line := range strings.Lines(doc[at:]) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "|"):
			inTable = true
			if m := row.FindStringSubmatch(line); m != nil {
				codes = append(codes, m[1])
			}
		case inTable:
			return codes
		}
	}
	return codes
}

// TestErrorCodesListed: Codes holds every Code constant, once, and each has its
// constructor.
func TestErrorCodesListed(t *testing.T) {
	files := parseSource(t, ".")
	consts := codeConsts(t, files)
	for name, value := range consts {
		if !slices.Contains(Codes, Code(value)) {
			t.Errorf("error code constant %s (%q) is not in Codes", name, value)
		}
	}
	seen := map[Code]bool{}
	for _, c := range Codes {
		if seen[c] {
			t.Errorf("Codes lists %q twice", c)
		}
		seen[c] = true
	}
	if len(consts) != len(Codes) {
		t.Errorf("%d Code constants, %d codes in Codes", len(consts), len(Codes))
	}
	ctors := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				ctors[fd.Name.Name] = true
			}
		}
	}
	for name := range consts {
		if ctor := "Err" + strings.TrimPrefix(name, "Code"); !ctors[ctor] {
			t.Errorf("no constructor %s for %s", ctor, name)
		}
	}
}

// TestNoErrorLiteralOutsideTheConstructors is a vet-like check of the server's source
// (every package under server/, tests left out): an Error is only ever made by this
// package's constructors, so its code is always one of the constants. Outside this
// package a composite literal of httpapi.Error, or a conversion to httpapi.Code, fails;
// inside it, an Error literal's Code must be one of the constants.
func TestNoErrorLiteralOutsideTheConstructors(t *testing.T) {
	files := parseSource(t, ".")
	consts := codeConsts(t, files)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "Error" {
				for _, el := range lit.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						t.Errorf("%s: an Error literal without field names", fset.Position(el.Pos()))
						continue
					}
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
						if v, ok := kv.Value.(*ast.Ident); !ok || consts[v.Name] == "" {
							t.Errorf("%s: an Error's Code %s is not one of the Code constants", fset.Position(kv.Pos()), exprText(kv.Value))
						}
					}
				}
			}
			return true
		})
	}
	// Every package under server/, at any depth (testdata and this package left out).
	var dirs []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case !d.IsDir():
			return nil
		case d.Name() == "testdata" || path == filepath.Join("..", "httpapi"):
			return filepath.SkipDir
		}
		dirs = append(dirs, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"..", "../edge", "../objects", "../stream/streamtest"} {
		if !slices.Contains(dirs, filepath.Clean(want)) {
			t.Fatalf("the walk of server/ missed %s: %v", want, dirs)
		}
	}
	for _, dir := range dirs {
		for _, f := range parseSource(t, dir) {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" && isHTTPAPI(sel.X) {
						t.Errorf("%s: an httpapi.Error literal: use its constructors (add the code to Codes and docs/api.md)", fset.Position(n.Pos()))
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Code" && isHTTPAPI(sel.X) {
						t.Errorf("%s: a conversion to httpapi.Code: use one of the constants", fset.Position(n.Pos()))
					}
				}
				return true
			})
		}
	}
}

func isHTTPAPI(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "httpapi"
}

// fset positions the parsed source in failure messages.
var fset = token.NewFileSet()

// parseSource parses dir's non-test Go files.
func parseSource(t *testing.T, dir string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// codeConsts are the constants declared with type Code, by name.
func codeConsts(t *testing.T, files []*ast.File) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, nm := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: Code constant %s is not a string literal", fset.Position(nm.Pos()), nm.Name)
					}
					out[nm.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out
}

func exprText(e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok {
		return lit.Value
	}
	return "expression at " + fset.Position(e.Pos()).String()
}

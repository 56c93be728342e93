package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestErrorCodesDocumented: every code of errorCodes is in docs/api.md's table of error
// codes, and every code of that table is in errorCodes.
func TestErrorCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedErrorCodes(string(doc))
	if len(documented) == 0 {
		t.Fatal("docs/api.md has no table of error codes after \"`error` is one of\"")
	}
	for _, c := range errorCodes {
		if !slices.Contains(documented, string(c)) {
			t.Errorf("error code %q is not documented in docs/api.md", c)
		}
	}
	for _, d := range documented {
		if !slices.Contains(errorCodes, errorCode(d)) {
			t.Errorf("docs/api.md documents error code %q, which errorCodes does not list", d)
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

// TestErrorCodesListed: errorCodes holds every errorCode constant, once.
func TestErrorCodesListed(t *testing.T) {
	consts := errorCodeConsts(t, parseServerSource(t))
	for name, value := range consts {
		if !slices.Contains(errorCodes, errorCode(value)) {
			t.Errorf("error code constant %s (%q) is not in errorCodes", name, value)
		}
	}
	seen := map[errorCode]bool{}
	for _, c := range errorCodes {
		if seen[c] {
			t.Errorf("errorCodes lists %q twice", c)
		}
		seen[c] = true
	}
	if len(consts) != len(errorCodes) {
		t.Errorf("%d errorCode constants, %d codes in errorCodes", len(consts), len(errorCodes))
	}
}

// TestNoErrorCodeOutsideTheList is a vet-like check of the server's source (tests left
// out): an error code is only ever named by one of the errorCode constants. It looks at
// what can carry a code: an apiError literal's Code, an argument of an errorCode
// parameter (writeError's, say), and a conversion to errorCode; a string literal there,
// or any other expression, fails (except a function passing on its own errorCode
// parameter).
func TestNoErrorCodeOutsideTheList(t *testing.T) {
	files := parseServerSource(t)
	consts := errorCodeConsts(t, files)
	// Functions with errorCode parameters: which argument positions carry codes.
	codeParams := map[string][]int{}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			i := 0
			for _, field := range fd.Type.Params.List {
				n := max(len(field.Names), 1)
				if id, ok := field.Type.(*ast.Ident); ok && id.Name == "errorCode" {
					for k := range n {
						codeParams[fd.Name.Name] = append(codeParams[fd.Name.Name], i+k)
					}
				}
				i += n
			}
		}
	}
	for _, f := range files {
		var params map[string]bool // the enclosing function's errorCode parameters
		check := func(what string, e ast.Expr) {
			if id, ok := e.(*ast.Ident); ok && (consts[id.Name] != "" || params[id.Name]) {
				return
			}
			t.Errorf("%s: %s %s is not one of the errorCode constants (add the code to errorCodes and docs/api.md)", fset.Position(e.Pos()), what, exprText(e))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				params = map[string]bool{}
				for _, field := range n.Type.Params.List {
					if id, ok := field.Type.(*ast.Ident); ok && id.Name == "errorCode" {
						for _, nm := range field.Names {
							params[nm.Name] = true
						}
					}
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "apiError" {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
								check("apiError Code", kv.Value)
							}
						} else {
							t.Errorf("%s: an apiError literal without field names", fset.Position(el.Pos()))
						}
					}
				}
			case *ast.CallExpr:
				var fn string
				switch f := n.Fun.(type) {
				case *ast.Ident:
					fn = f.Name
				case *ast.SelectorExpr:
					fn = f.Sel.Name
				}
				if fn == "errorCode" {
					check("conversion", n)
				}
				for _, i := range codeParams[fn] {
					if i < len(n.Args) {
						check(fn+"'s code", n.Args[i])
					}
				}
			}
			return true
		})
	}
}

// fset positions the parsed source in failure messages.
var fset = token.NewFileSet()

// parseServerSource parses the package's non-test files.
func parseServerSource(t *testing.T) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob("*.go")
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

// errorCodeConsts are the constants declared with type errorCode, by name.
func errorCodeConsts(t *testing.T, files []*ast.File) map[string]string {
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
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "errorCode" {
					continue
				}
				for i, nm := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: errorCode constant %s is not a string literal", fset.Position(nm.Pos()), nm.Name)
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

// Package jsdoc writes JSDoc typedefs of Go types as encoding/json writes their values, so
// that the page's generated vocabularies (static/src/events.gen.js, frames.gen.js) are
// derived from the Go structs' JSON tags rather than written twice.
package jsdoc

import (
	"flag"
	"fmt"
	"log"
	"os"
	"reflect"
	"strings"
	"time"
)

// Main is a generator command's main: it writes generate's text to the file -o names, or
// to standard output.
func Main(generate func() []byte) {
	out := flag.String("o", "", "the file to write (standard output when empty)")
	flag.Parse()
	src := generate()
	if *out == "" {
		os.Stdout.Write(src)
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// Typedefs collects a typedef for each struct reachable from those added, in the order met.
type Typedefs struct {
	defs []string // name, type, name, type...
	done map[reflect.Type]bool
	// Named are types written by a name of their own (a string enum, a struct declared in
	// another file) rather than by their shape; used records those written.
	Named map[reflect.Type]string
	used  map[string]bool
	// fields overrides the JSDoc type of some structs' fields (a frame's literal type).
	fields map[reflect.Type]map[string]string
}

// New starts a set of typedefs; named as Typedefs.Named.
func New(named map[reflect.Type]string) *Typedefs {
	if named == nil {
		named = map[reflect.Type]string{}
	}
	return &Typedefs{done: map[reflect.Type]bool{}, Named: named, used: map[string]bool{}, fields: map[reflect.Type]map[string]string{}}
}

// Field writes field (its JSON name) of struct t as js, whatever its Go type.
func (g *Typedefs) Field(t reflect.Type, field, js string) {
	if g.fields[t] == nil {
		g.fields[t] = map[string]string{}
	}
	g.fields[t][field] = js
}

// Used reports whether a Named type was written.
func (g *Typedefs) Used(name string) bool { return g.used[name] }

// Types are the struct types with a typedef here, in the order met.
func (g *Typedefs) Types() []reflect.Type {
	var out []reflect.Type
	for t := range g.done {
		out = append(out, t)
	}
	return out
}

// Declare adds a typedef of its own: name for the JSDoc type def.
func (g *Typedefs) Declare(name, def string) { g.defs = append(g.defs, name, def) }

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
)

// Add declares struct type t (and those it refers to) once.
func (g *Typedefs) Add(t reflect.Type) {
	if g.done[t] {
		return
	}
	g.done[t] = true
	i := len(g.defs)
	g.defs = append(g.defs, t.Name(), "") // its place, before those it refers to
	var embedded, fields []string
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
			continue
		case f.Anonymous && name == "":
			embedded = append(embedded, g.JS(f.Type))
			continue
		case name == "":
			name = f.Name
		}
		optional := f.Type.Kind() == reflect.Pointer || strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		field := name
		if optional {
			field += "?"
		}
		js, ok := g.fields[t][name]
		if !ok {
			js = g.JS(f.Type)
		}
		fields = append(fields, field+": "+js)
	}
	def := "{" + strings.Join(fields, ", ") + "}"
	if len(embedded) > 0 {
		def = strings.Join(embedded, " & ") + " & " + def
	}
	g.defs[i+1] = def
}

// JS is the JSDoc type of a value of Go type t as encoding/json writes it.
func (g *Typedefs) JS(t reflect.Type) string {
	if name, ok := g.Named[t]; ok {
		g.used[name] = true
		return name
	}
	switch {
	case t == timeType:
		return "string" // RFC 3339
	case t == durationType:
		return "number" // nanoseconds
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.JS(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return g.JS(t.Elem()) + "[]"
	case reflect.Map:
		return "Record<string, " + g.JS(t.Elem()) + ">"
	case reflect.Struct:
		g.Add(t)
		return t.Name()
	}
	panic(fmt.Sprintf("jsdoc: no JavaScript type for Go type %s", t))
}

// Comment is the typedefs as one JSDoc comment.
func (g *Typedefs) Comment() string {
	var b strings.Builder
	b.WriteString("/**\n")
	for i := 0; i < len(g.defs); i += 2 {
		fmt.Fprintf(&b, " * @typedef {%s} %s\n", g.defs[i+1], g.defs[i])
	}
	b.WriteString(" */\n")
	return b.String()
}

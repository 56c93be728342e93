package difftest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// The kinds a scenario is made of: a namespaced built-in, a cluster-scoped built-in and
// the scenario's own custom resource (namespaced, served as v1, the preferred version the
// collectors watch, and v1beta1).
const (
	kindConfigMap   = "ConfigMap"
	kindClusterRole = "ClusterRole"
	kindWidget      = "Widget"
)

// How a reference names its owner.
const (
	asOwner        = ""           // the owner's own apiVersion, kind, name and uid
	asWrongKind    = "wrong-kind" // the owner's name and uid under another kind
	asOtherVersion = "v1beta1"    // a Widget owner through its other version
)

// Steps.
const (
	opDelete     = "delete"      // Target, Policy ("" leaves the server's default)
	opRelease    = "release"     // remove the hold finalizer from Target
	opHold       = "hold"        // add the hold finalizer to Target
	opSetRefs    = "set-refs"    // replace Target's ownerReferences with Refs (and its self-reference with Self)
	opV1beta1Off = "v1beta1-off" // the Widget CRD stops serving v1beta1
	opV1beta1On  = "v1beta1-on"  // and serves it again
	opCRDDelete  = "crd-delete"  // delete the Widget CRD (its Widgets go with it)
	opCRDCreate  = "crd-create"  // release the Widgets it waits for, and create it again
	opReleaseAll = "release-all" // remove every hold finalizer
)

// Ref is one ownerReference, to another object of the scenario (Owner is its index, always
// lower than the dependent's) or, when Owner is -1, to an object that never existed.
type Ref struct {
	Owner      int    `json:"owner"`
	As         string `json:"as,omitempty"`
	Controller bool   `json:"controller,omitempty"`
	Block      bool   `json:"block,omitempty"`
}

// Object is one object of a scenario.
type Object struct {
	Kind    string `json:"kind"`
	OtherNS bool   `json:"otherNS,omitempty"` // lives in the scenario's second namespace
	Refs    []Ref  `json:"refs,omitempty"`
	Self    bool   `json:"self,omitempty"` // also names itself
	Held    bool   `json:"held,omitempty"` // created with the hold finalizer
}

// Step is one thing done to both clusters between two comparisons.
type Step struct {
	Op     string `json:"op"`
	Target int    `json:"target,omitempty"`
	Policy string `json:"policy,omitempty"`
	Refs   []Ref  `json:"refs,omitempty"`
	Self   bool   `json:"self,omitempty"`
}

// Scenario is what a seed makes: objects created with the references that make none of
// them garbage, then steps. The first steps link the rest (see link).
type Scenario struct {
	Seed    int64    `json:"seed"`
	Objects []Object `json:"objects"`
	Steps   []Step   `json:"steps"`
}

var policies = []string{"Background", "Foreground", "Orphan", ""}

func generate(seed int64) Scenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	s := Scenario{Seed: seed}
	withCRD := r.IntN(3) == 0
	// Upstream's outcome is a race when a CRD is deleted under a dependent that names its
	// owner through a version other than the one watched: the owner's delete event does
	// not reach the absent-owner cache under that version, so the dependent is collected
	// only if a worker asks the apiserver before the CRD is gone. Scenarios that delete the
	// CRD name their Widgets through v1 only.
	deletesCRD := withCRD && r.IntN(3) == 0
	n := 4 + r.IntN(7)
	for i := range n {
		o := Object{Kind: kindConfigMap}
		switch k := r.IntN(20); {
		case k < 3:
			o.Kind = kindClusterRole
		case k < 9 && withCRD:
			o.Kind = kindWidget
		}
		o.OtherNS = o.Kind != kindClusterRole && r.IntN(8) == 0
		if i > 0 {
			for range r.IntN(3) {
				owner := r.IntN(i)
				if slices.ContainsFunc(o.Refs, func(ref Ref) bool { return ref.Owner == owner }) {
					continue
				}
				ref := Ref{Owner: owner, Block: r.IntN(3) > 0}
				ref.Controller = !slices.ContainsFunc(o.Refs, func(r Ref) bool { return r.Controller }) && r.IntN(2) == 0
				switch k := r.IntN(12); {
				case k == 0:
					ref.As = asWrongKind
				case k < 4 && s.Objects[owner].Kind == kindWidget && !deletesCRD:
					ref.As = asOtherVersion
				}
				o.Refs = append(o.Refs, ref)
			}
		}
		if r.IntN(8) == 0 {
			o.Refs = append(o.Refs, Ref{Owner: -1, Block: r.IntN(2) == 0})
		}
		o.Self = r.IntN(15) == 0
		o.Held = r.IntN(5) == 0
		s.Objects = append(s.Objects, o)
	}
	s.Steps = s.link()
	for want := len(s.Steps) + 1 + r.IntN(4); len(s.Steps) < want; {
		switch k := r.IntN(20); {
		case k < 9:
			target := r.IntN(n)
			first := r.IntN(len(policies))
			s.Steps = append(s.Steps, Step{Op: opDelete, Target: target, Policy: policies[first]})
			if r.IntN(4) == 0 { // a second delete that swaps the policy
				s.Steps = append(s.Steps, Step{Op: opDelete, Target: target, Policy: policies[(first+1+r.IntN(len(policies)-1))%len(policies)]})
			}
		case k < 11:
			s.Steps = append(s.Steps, Step{Op: opRelease, Target: r.IntN(n)})
		case k < 13:
			s.Steps = append(s.Steps, Step{Op: opHold, Target: r.IntN(n)})
		case k < 16:
			s.Steps = append(s.Steps, s.edit(r))
		case k < 18 && withCRD && !deletesCRD:
			s.Steps = append(s.Steps, Step{Op: opV1beta1Off})
			if r.IntN(2) == 0 {
				s.Steps = append(s.Steps, Step{Op: opDelete, Target: r.IntN(n), Policy: policies[r.IntN(len(policies))]})
			}
			s.Steps = append(s.Steps, Step{Op: opV1beta1On})
		case deletesCRD:
			s.Steps = append(s.Steps, Step{Op: opCRDDelete})
			if r.IntN(2) == 0 {
				s.Steps = append(s.Steps, Step{Op: opDelete, Target: r.IntN(n), Policy: policies[r.IntN(len(policies))]})
			}
			s.Steps = append(s.Steps, Step{Op: opCRDCreate})
		}
	}
	s.Steps = append(s.Steps, Step{Op: opReleaseAll})
	return s
}

// edit changes one object's references: drops one, or adds one to an earlier object.
func (s Scenario) edit(r *rand.Rand) Step {
	target := r.IntN(len(s.Objects))
	o := s.Objects[target]
	refs := slices.Clone(o.Refs)
	if len(refs) > 0 && (target == 0 || r.IntN(2) == 0) {
		k := r.IntN(len(refs))
		refs = slices.Delete(refs, k, k+1)
	} else if target > 0 {
		owner := r.IntN(target)
		if !slices.ContainsFunc(refs, func(ref Ref) bool { return ref.Owner == owner }) {
			refs = append(refs, Ref{Owner: owner, Block: r.IntN(2) == 0})
		}
	}
	return Step{Op: opSetRefs, Target: target, Refs: refs, Self: o.Self}
}

// solid reports whether ref, as written at creation, names a live owner the way the
// apiserver's own scoping allows: its owner's own kind and version, and a namespace the
// dependent can see. Only those are written at creation, so that nothing is garbage until
// link writes the rest.
func (s Scenario) solid(dependent Object, ref Ref) bool {
	if ref.Owner < 0 || ref.As == asWrongKind {
		return false
	}
	owner := s.Objects[ref.Owner]
	if owner.Kind == kindClusterRole {
		return true
	}
	return dependent.Kind != kindClusterRole && dependent.OtherNS == owner.OtherNS
}

func (s Scenario) creationRefs(o Object) []Ref {
	return slices.DeleteFunc(slices.Clone(o.Refs), func(ref Ref) bool { return !s.solid(o, ref) })
}

// link is the steps that write the references creation left out (dangling, wrong-kind,
// cross-namespace, cluster-scoped to namespaced) and self-references, dependents first:
// when an object becomes garbage, every object below it already names its owners, and
// each step settles before the next, so no cascade races the scenario's own writes.
func (s Scenario) link() []Step {
	var steps []Step
	for i := len(s.Objects) - 1; i >= 0; i-- {
		o := s.Objects[i]
		if o.Self || len(s.creationRefs(o)) != len(o.Refs) {
			steps = append(steps, Step{Op: opSetRefs, Target: i, Refs: o.Refs, Self: o.Self})
		}
	}
	return steps
}

// usesCRD reports whether the scenario needs the Widget CRD.
func (s Scenario) usesCRD() bool {
	return slices.ContainsFunc(s.Objects, func(o Object) bool { return o.Kind == kindWidget }) ||
		slices.ContainsFunc(s.Steps, func(st Step) bool { return st.Op == opV1beta1Off || st.Op == opCRDDelete })
}

func (s Scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d:", s.Seed)
	for i, o := range s.Objects {
		fmt.Fprintf(&b, " %s%v", objLabel(i, o), refsString(o.Refs, o.Self))
		if o.Held {
			b.WriteString("h")
		}
	}
	for _, st := range s.Steps {
		b.WriteString(" | ")
		b.WriteString(st.String())
	}
	return b.String()
}

func (st Step) String() string {
	switch st.Op {
	case opDelete:
		p := st.Policy
		if p == "" {
			p = "default"
		}
		return fmt.Sprintf("delete o%d %s", st.Target, p)
	case opRelease, opHold:
		return fmt.Sprintf("%s o%d", st.Op, st.Target)
	case opSetRefs:
		return fmt.Sprintf("set-refs o%d %s", st.Target, refsString(st.Refs, st.Self))
	}
	return st.Op
}

func objLabel(i int, o Object) string {
	l := fmt.Sprintf("o%d:%s", i, o.Kind)
	if o.OtherNS {
		l += "@b"
	}
	return l
}

func refsString(refs []Ref, self bool) string {
	var parts []string
	for _, r := range refs {
		p := "ghost"
		if r.Owner >= 0 {
			p = fmt.Sprintf("o%d", r.Owner)
		}
		if r.As != "" {
			p += "~" + r.As
		}
		if r.Controller {
			p += "+c"
		}
		if r.Block {
			p += "+b"
		}
		parts = append(parts, p)
	}
	if self {
		parts = append(parts, "self")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

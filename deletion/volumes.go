package deletion

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcscope/gcscope/gc"
)

// What a delete does to storage, beyond the ownership graph: a PersistentVolumeClaim
// that goes releases its PersistentVolume, and the PV controller then acts on the
// volume's persistentVolumeReclaimPolicy: Delete deletes the PV and, through its CSI
// driver or provisioner, the disk; Retain keeps both, Released; Recycle scrubs the data
// and offers the volume to a new claim. A StatefulSet's claims go with it only when its
// persistentVolumeClaimRetentionPolicy.whenDeleted is Delete (its controller then gives
// them an owner reference to it); by default they are left behind.

// The verdicts on a volume.
const (
	VolumeDataLoss = "data-loss" // the disk is deleted
	VolumeRetained = "retained"  // the PV and its data stay, Released
	VolumeRecycled = "recycled"  // the data is scrubbed, the PV offered again
	VolumeKept     = "kept"      // the claim itself stays
	VolumeNone     = "none"      // the claim is bound to no volume
	VolumeUnknown  = "unknown"
)

// VolumeFate is what becomes of one claim's volume.
type VolumeFate struct {
	Claim gc.ObjectRef `json:"claim"`
	// Volume is the PersistentVolume it is bound to (spec.volumeName), and what it says of
	// itself: reclaim policy, capacity, StorageClass, and the CSI driver (or in-tree
	// plugin) with its volume handle.
	Volume        string `json:"volume,omitempty"`
	ReclaimPolicy string `json:"reclaimPolicy,omitempty"`
	Capacity      string `json:"capacity,omitempty"`
	StorageClass  string `json:"storageClass,omitempty"`
	Driver        string `json:"driver,omitempty"`
	Handle        string `json:"handle,omitempty"`
	Verdict       string `json:"verdict"`
	Says          string `json:"says"`
}

// LeftBehind is an object a delete leaves in place, and why.
type LeftBehind struct {
	Object gc.ObjectRef `json:"object"`
	Reason string       `json:"reason"`
}

// Consequences are what a predicted delete does beyond the objects it deletes.
type Consequences struct {
	// Volumes: the storage of every claim the delete removes, data loss first, then the
	// claims StatefulSets leave behind.
	Volumes []VolumeFate `json:"volumes,omitempty"`
	// LeftBehind: what stays, with why (orphaned dependents, objects other owners hold,
	// a StatefulSet's retained claims).
	LeftBehind []LeftBehind `json:"leftBehind,omitempty"`
	// Recreated: what it deletes that comes back, and who brings it back (recreated.go).
	Recreated []Recreated `json:"recreated,omitempty"`
	// Unread says what could not be read; what is here stands.
	Unread string `json:"unread,omitempty"`
}

// DataLoss counts the volumes whose disk the delete destroys.
func (c Consequences) DataLoss() int {
	n := 0
	for _, v := range c.Volumes {
		if v.Verdict == VolumeDataLoss {
			n++
		}
	}
	return n
}

// maxVolumeReads bounds the claims and StatefulSets whose storage a prediction reads;
// readsPerListing is how many of one namespace are read with one LIST rather than a GET
// each.
const (
	maxVolumeReads  = 500
	readsPerListing = 4
)

var (
	claimKind       = gc.ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
	volumeKind      = gc.ObjectRef{APIVersion: "v1", Kind: "PersistentVolume"}
	statefulSetKind = gc.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet"}
)

func isKind(ref, kind gc.ObjectRef) bool {
	return ref.APIVersion == kind.APIVersion && ref.Kind == kind.Kind
}

// Consequences reads what p's delete does to storage and what it leaves behind
// (communicates with the server: the claims, their volumes and the StatefulSets, a GET
// each or a LIST per namespace, bounded). visible is what the reader may see: a volume
// is described only to a reader who may list PersistentVolumes.
func (x *Explainer) Consequences(ctx context.Context, p gc.Prediction, visible Visible) Consequences {
	var c Consequences
	leftBehind := map[string]string{} // namespace/kind/name → why, of what the graph says stays
	for _, o := range p.Orphaned {
		c.LeftBehind = append(c.LeftBehind, LeftBehind{Object: o.Object, Reason: "orphaned: " + o.Reason})
		leftBehind[o.Object.Namespace+"/"+o.Object.Kind+"/"+o.Object.Name] = "orphaned: " + o.Reason
	}
	for _, o := range p.Kept {
		c.LeftBehind = append(c.LeftBehind, LeftBehind{Object: o.Object, Reason: "another owner holds it: " + o.Reason})
		leftBehind[o.Object.Namespace+"/"+o.Object.Kind+"/"+o.Object.Name] = "another owner holds it: " + o.Reason
	}
	c.Recreated = x.recreated(ctx, p, visible)
	deleted := map[string]bool{}
	var claims, sets []gc.ObjectRef
	for _, d := range p.Deleted {
		deleted[d.Object.Namespace+"/"+d.Object.Kind+"/"+d.Object.Name] = true
		switch {
		case isKind(d.Object, claimKind):
			claims = append(claims, d.Object)
		case isKind(d.Object, statefulSetKind):
			sets = append(sets, d.Object)
		}
	}
	if len(claims)+len(sets) == 0 {
		return c
	}
	if len(claims)+len(sets) > maxVolumeReads {
		c.Unread = fmt.Sprintf("the delete removes %d claims and StatefulSets: gcscope reads the storage of at most %d", len(claims)+len(sets), maxVolumeReads)
		return c
	}
	r := &storageReader{x: x, ctx: ctx, claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{}, asked: byNamespace(claims)}
	// A StatefulSet's claims that do not go with it stay, with their data.
	for _, s := range r.statefulSets(sets) {
		whenDeleted := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
		if rp := s.Spec.PersistentVolumeClaimRetentionPolicy; rp != nil && rp.WhenDeleted != "" {
			whenDeleted = rp.WhenDeleted
		}
		for _, claim := range x.claimsOf(s) {
			key := claim.Namespace + "/" + claim.Kind + "/" + claim.Name
			if deleted[key] || !visible.sees(claim) {
				continue
			}
			if why, listed := leftBehind[key]; listed { // orphaned, or held by another owner: said once
				c.Volumes = append(c.Volumes, VolumeFate{Claim: claim, Verdict: VolumeKept, Says: "the claim stays, and its volume with it: " + why})
				continue
			}
			why := fmt.Sprintf("StatefulSet %s keeps its claims when deleted (persistentVolumeClaimRetentionPolicy.whenDeleted: Retain, the default): the claim and its data stay", s.Name)
			if whenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
				why = fmt.Sprintf("StatefulSet %s deletes its claims (whenDeleted: Delete), but its controller has not given this one an owner reference to it: it stays", s.Name)
			}
			c.LeftBehind = append(c.LeftBehind, LeftBehind{Object: claim, Reason: why})
			c.Volumes = append(c.Volumes, VolumeFate{Claim: claim, Verdict: VolumeKept, Says: "the claim stays, and its volume with it: " + why})
		}
	}
	for _, claim := range claims {
		c.Volumes = append(c.Volumes, r.fate(claim, visible))
	}
	if r.err != nil {
		c.Unread = r.err.Error()
	}
	slices.SortStableFunc(c.Volumes, func(a, b VolumeFate) int { return verdictRank(a.Verdict) - verdictRank(b.Verdict) })
	return c
}

// verdictRank orders volumes: data loss first.
func verdictRank(v string) int {
	return slices.Index([]string{VolumeDataLoss, VolumeRecycled, VolumeUnknown, VolumeRetained, VolumeKept, VolumeNone}, v)
}

// claimsOf are the claims the graph holds that s's volumeClaimTemplates made: named
// TEMPLATE-STATEFULSET-ORDINAL in its namespace.
func (x *Explainer) claimsOf(s *appsv1.StatefulSet) []gc.ObjectRef {
	if len(s.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	var names []string
	for _, t := range s.Spec.VolumeClaimTemplates {
		names = append(names, regexp.QuoteMeta(t.Name+"-"+s.Name))
	}
	made := regexp.MustCompile(`^(` + strings.Join(names, "|") + `)-[0-9]+$`)
	var out []gc.ObjectRef
	for _, o := range x.graph.InNamespace(s.Namespace) {
		if isKind(o.ObjectRef, claimKind) && made.MatchString(o.Name) {
			out = append(out, o.ObjectRef)
		}
	}
	return out
}

// storageReader reads claims, volumes and StatefulSets for one prediction: a GET each
// where a namespace has a few, one LIST where it has more; every volume once.
type storageReader struct {
	x       *Explainer
	ctx     context.Context
	claims  map[string]*corev1.PersistentVolumeClaim // namespace/name
	volumes map[string]*corev1.PersistentVolume
	listed  bool                // every volume was listed
	asked   map[string][]string // the claims a prediction deletes, by namespace
	err     error
}

func (r *storageReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *storageReader) statefulSets(refs []gc.ObjectRef) []*appsv1.StatefulSet {
	var out []*appsv1.StatefulSet
	for ns, names := range byNamespace(refs) {
		if len(names) > readsPerListing {
			l, err := r.x.kube.AppsV1().StatefulSets(ns).List(r.ctx, metav1.ListOptions{})
			if err != nil {
				r.fail(fmt.Errorf("cannot list the StatefulSets of %s: %w", ns, err))
				continue
			}
			for i := range l.Items {
				if slices.Contains(names, l.Items[i].Name) {
					out = append(out, &l.Items[i])
				}
			}
			continue
		}
		for _, name := range names {
			s, err := r.x.kube.AppsV1().StatefulSets(ns).Get(r.ctx, name, metav1.GetOptions{})
			if err != nil {
				r.fail(fmt.Errorf("cannot read StatefulSet %s/%s: %w", ns, name, err))
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// claim reads the claim of ref; its namespace's claims are listed when it has many.
func (r *storageReader) claim(ref gc.ObjectRef, many bool) (*corev1.PersistentVolumeClaim, error) {
	key := ref.Namespace + "/" + ref.Name
	if pvc, ok := r.claims[key]; ok {
		return pvc, nil
	}
	if many {
		l, err := r.x.kube.CoreV1().PersistentVolumeClaims(ref.Namespace).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			r.claims[l.Items[i].Namespace+"/"+l.Items[i].Name] = &l.Items[i]
		}
		if pvc, ok := r.claims[key]; ok {
			return pvc, nil
		}
		return nil, fmt.Errorf("not found")
	}
	return r.x.kube.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(r.ctx, ref.Name, metav1.GetOptions{})
}

// volume reads the PersistentVolume name; all of them are listed once many are asked for.
func (r *storageReader) volume(name string) (*corev1.PersistentVolume, error) {
	if pv, ok := r.volumes[name]; ok {
		return pv, nil
	}
	if r.listed {
		return nil, fmt.Errorf("not found")
	}
	if len(r.volumes) >= readsPerListing {
		l, err := r.x.kube.CoreV1().PersistentVolumes().List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		r.listed = true
		for i := range l.Items {
			r.volumes[l.Items[i].Name] = &l.Items[i]
		}
		return r.volume(name)
	}
	pv, err := r.x.kube.CoreV1().PersistentVolumes().Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	r.volumes[name] = pv
	return pv, nil
}

// fate says what becomes of the volume of a claim that goes.
func (r *storageReader) fate(claim gc.ObjectRef, visible Visible) VolumeFate {
	f := VolumeFate{Claim: claim, Verdict: VolumeUnknown}
	pvc, err := r.claim(claim, len(r.asked[claim.Namespace]) > readsPerListing)
	if err != nil {
		f.Says = "cannot tell what becomes of its volume: cannot read the claim: " + err.Error()
		return f
	}
	if pvc.Spec.StorageClassName != nil {
		f.StorageClass = *pvc.Spec.StorageClassName
	}
	if pvc.Spec.VolumeName == "" {
		f.Verdict, f.Says = VolumeNone, "the claim is bound to no volume ("+string(pvc.Status.Phase)+"): no data goes with it"
		return f
	}
	f.Volume = pvc.Spec.VolumeName
	if !visible.sees(volumeKind) {
		f.Says = "cannot tell what becomes of volume " + f.Volume + ": you may not list PersistentVolumes"
		return f
	}
	pv, err := r.volume(f.Volume)
	if err != nil {
		f.Says = "cannot tell what becomes of volume " + f.Volume + ": cannot read it: " + err.Error()
		return f
	}
	describeVolume(&f, pv)
	what := strings.Join(f.details(), ", ")
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		f.Verdict = VolumeDataLoss
		f.Says = "data loss: once the claim is gone, the PV controller deletes PersistentVolume " + f.Volume + " and the storage provider deletes the volume (" + what + ")"
	case corev1.PersistentVolumeReclaimRetain:
		f.Verdict = VolumeRetained
		f.Says = "kept: PersistentVolume " + f.Volume + " (" + what + ") stays, Released, with its data; to use it again, clear its claimRef (kubectl patch pv " + f.Volume +
			` -p '{"spec":{"claimRef":null}}'), or delete it and then its disk when the data is no longer needed`
	case corev1.PersistentVolumeReclaimRecycle:
		f.Verdict = VolumeRecycled
		f.Says = "data loss: the PV controller scrubs PersistentVolume " + f.Volume + " (rm -rf of its content; Recycle is deprecated) and offers it to a new claim (" + what + ")"
	default:
		f.Says = "cannot tell what becomes of volume " + f.Volume + ": its reclaim policy " + string(pv.Spec.PersistentVolumeReclaimPolicy) + " is not one Kubernetes knows"
	}
	return f
}

// describeVolume fills in what pv says of itself.
func describeVolume(f *VolumeFate, pv *corev1.PersistentVolume) {
	f.ReclaimPolicy = string(pv.Spec.PersistentVolumeReclaimPolicy)
	if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		f.Capacity = q.String()
	}
	if pv.Spec.StorageClassName != "" {
		f.StorageClass = pv.Spec.StorageClassName
	}
	switch s := pv.Spec.PersistentVolumeSource; {
	case s.CSI != nil:
		f.Driver, f.Handle = s.CSI.Driver, s.CSI.VolumeHandle
	case s.HostPath != nil:
		f.Driver, f.Handle = "hostPath", s.HostPath.Path
	case s.Local != nil:
		f.Driver, f.Handle = "local", s.Local.Path
	case s.NFS != nil:
		f.Driver, f.Handle = "nfs", s.NFS.Server+":"+s.NFS.Path
	default:
		f.Driver = pv.Annotations["pv.kubernetes.io/provisioned-by"]
	}
}

// details are the volume's facts as the warning says them.
func (f VolumeFate) details() []string {
	var out []string
	if f.Capacity != "" {
		out = append(out, f.Capacity)
	}
	if f.StorageClass != "" {
		out = append(out, "StorageClass "+f.StorageClass)
	}
	if f.Driver != "" {
		d := "driver " + f.Driver
		if f.Handle != "" {
			d += ", volume " + f.Handle
		}
		out = append(out, d)
	}
	return out
}

func byNamespace(refs []gc.ObjectRef) map[string][]string {
	out := map[string][]string{}
	for _, r := range refs {
		out[r.Namespace] = append(out[r.Namespace], r.Name)
	}
	return out
}

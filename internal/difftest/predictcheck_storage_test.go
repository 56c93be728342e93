package difftest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// The prediction check's storage part. Each seed also builds, on a control plane of its
// own that runs kube-controller-manager's controllers (the StatefulSet controller makes
// Pods and claims and gives claims their owner references, the PV controller binds and
// reclaims volumes, pvc-protection holds claims in use), StatefulSets whose claims are
// bound to hostPath volumes under a directory of the check's, and a claim a ConfigMap
// owns. The PV controller's hostPath deleter really removes a Delete volume's directory:
// the disk is this machine's. A random delete is predicted (the engine's prediction and
// deletion.Explainer's consequences: volumes, left behind, recreated), made, and compared
// (see judgeStorage).

var (
	storageSide      *side
	storageEngine    *gc.GarbageCollector
	storageExplainer *deletion.Explainer
)

func storageEnv(t *testing.T) (*side, *gc.GarbageCollector, *deletion.Explainer) {
	t.Helper()
	testkit.Shared(t, testkit.Options{Name: "storage", Controllers: true, Setup: func(_ context.Context, k *testkit.Env) error {
		s := newSide("storage", k)
		engine, err := runOurs(k.Context(), s.config)
		if err != nil {
			return err
		}
		x, err := deletion.New(engine, s.config)
		if err != nil {
			return err
		}
		storageSide, storageEngine, storageExplainer = s, engine, x
		return nil
	}})
	return storageSide, storageEngine, storageExplainer
}

// volumesRoot is where the check's volumes live: the hostPath deleter removes only paths
// under /tmp/, whatever TMPDIR says.
const volumesRoot = "/tmp"

// storageSet is one StatefulSet of a storage scenario: its claims' volumes by ordinal
// ("" for a claim bound to none, which stays Pending).
type storageSet struct {
	name        string
	whenDeleted appsv1.PersistentVolumeClaimRetentionPolicyType // "" leaves it unset (Retain)
	volumes     []corev1.PersistentVolumeReclaimPolicy
}

// storageScenario: StatefulSets, and the volume of claim "scratch", owned by ConfigMap
// "holder".
type storageScenario struct {
	seed    int64
	sets    []storageSet
	scratch corev1.PersistentVolumeReclaimPolicy
}

func (s storageScenario) String() string {
	var parts []string
	show := func(v corev1.PersistentVolumeReclaimPolicy) string { return string(cmp.Or(v, "none")) }
	for _, st := range s.sets {
		var vs []string
		for _, v := range st.volumes {
			vs = append(vs, show(v))
		}
		parts = append(parts, fmt.Sprintf("%s[whenDeleted=%s volumes=%s]", st.name, cmp.Or(st.whenDeleted, "unset"), strings.Join(vs, ",")))
	}
	return fmt.Sprintf("storage seed %d: %s scratch[%s]", s.seed, strings.Join(parts, " "), show(s.scratch))
}

// generateStorage draws seed's storage scenario from a source of its own (the differential
// test's stays as it is).
func generateStorage(seed int64) storageScenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0x73746f72616765)) // "storage"
	volume := func() corev1.PersistentVolumeReclaimPolicy {
		switch r.IntN(5) {
		case 0:
			return ""
		case 1, 2:
			return corev1.PersistentVolumeReclaimDelete
		}
		return corev1.PersistentVolumeReclaimRetain
	}
	policies := []appsv1.PersistentVolumeClaimRetentionPolicyType{"", appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	s := storageScenario{seed: seed, scratch: volume()}
	for i := range 1 + r.IntN(2) {
		st := storageSet{name: fmt.Sprintf("db%d", i), whenDeleted: policies[r.IntN(len(policies))]}
		for range 1 + r.IntN(2) {
			st.volumes = append(st.volumes, volume())
		}
		s.sets = append(s.sets, st)
	}
	return s
}

// storageCheck is one seed's storage scenario on the storage control plane.
type storageCheck struct {
	s      storageScenario
	side   *side
	engine *gc.GarbageCollector
	x      *deletion.Explainer
	ns     string
	dir    string // the volumes' directories are here
}

// storageLabel marks the check's volumes (cluster-scoped) with the namespace of their seed.
const storageLabel = "predictcheck.gcscope.io/namespace"

// checkStorage builds seed's storage scenario, predicts one random delete on it, makes it
// and compares.
func checkStorage(ctx context.Context, sd *side, engine *gc.GarbageCollector, x *deletion.Explainer, seed int64) (out predictResult, err error) {
	s := generateStorage(seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0x646973636172)) // the check's own choices
	ns := fmt.Sprintf("st-%d-%d-%04x", seed, nsCounter.Add(1), rand.IntN(1<<16))
	dir, err := os.MkdirTemp(volumesRoot, "gcscope-predictcheck-")
	if err != nil {
		return out, err
	}
	c := &storageCheck{s: s, side: sd, engine: engine, x: x, ns: ns, dir: dir}
	defer c.cleanup()
	if err := c.create(ctx); err != nil {
		return out, fmt.Errorf("creating: %w", err)
	}
	if err := c.ready(ctx); err != nil {
		return out, fmt.Errorf("after creation: %w", err)
	}
	what, mismatches, err := c.round(ctx, r, &out)
	out.deletes++
	if err != nil {
		return out, fmt.Errorf("%s: %w", what, err)
	}
	if len(mismatches) > 0 {
		out.mismatches = append(out.mismatches, fmt.Sprintf("%s:\n    %s", what, strings.Join(mismatches, "\n    ")))
	}
	return out, nil
}

func (c *storageCheck) cleanup() {
	ctx := context.Background()
	_ = c.side.client.CoreV1().Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{})
	_ = c.side.client.CoreV1().PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: storageLabel + "=" + c.ns})
	_ = os.RemoveAll(c.dir)
}

// volumeName is the PersistentVolume made for claim, and its directory.
func (c *storageCheck) volumeName(claim string) string { return c.ns + "-" + claim }
func (c *storageCheck) volumePath(claim string) string { return filepath.Join(c.dir, claim) }

// create makes the namespace, the volumes (each with a file in its directory, and a
// claimRef to its claim, so that the PV controller binds the two), the holder and its
// claim, and the StatefulSets, whose controller makes their Pods and claims.
func (c *storageCheck) create(ctx context.Context) error {
	core := c.side.client.CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	volume := func(claim string, policy corev1.PersistentVolumeReclaimPolicy) error {
		if policy == "" {
			return nil
		}
		path := c.volumePath(claim)
		if err := os.MkdirAll(path, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(path, "data"), []byte(claim), 0o644); err != nil {
			return err
		}
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: c.volumeName(claim), Labels: map[string]string{storageLabel: c.ns}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: policy,
				StorageClassName:              "manual",
				ClaimRef:                      &corev1.ObjectReference{Namespace: c.ns, Name: claim},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
			}}
		_, err := core.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		return err
	}
	claimSpec := corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("manual"),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}

	if err := volume("scratch", c.s.scratch); err != nil {
		return err
	}
	holder, err := core.ConfigMaps(c.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "holder"}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	scratch := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "scratch", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: holder.Name, UID: holder.UID}}}, Spec: claimSpec}
	if _, err := core.PersistentVolumeClaims(c.ns).Create(ctx, scratch, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, st := range c.s.sets {
		for i, v := range st.volumes {
			if err := volume(fmt.Sprintf("data-%s-%d", st.name, i), v); err != nil {
				return err
			}
		}
		labels := map[string]string{"app": st.name}
		set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: st.name}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(len(st.volumes))), ServiceName: st.name, PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claimSpec}},
		}}
		if st.whenDeleted != "" {
			set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: st.whenDeleted, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
		}
		if _, err := c.side.client.AppsV1().StatefulSets(c.ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// storageState is the scenario's objects (StatefulSets, their ControllerRevisions, Pods,
// claims, the holder, by
// "Kind/name") and volumes (by name), as the apiserver holds them.
type storageState struct {
	objects map[string]storageObject
	volumes map[string]*corev1.PersistentVolume
}

type storageObject struct {
	uid    types.UID
	owners []types.UID
	claim  *corev1.PersistentVolumeClaim // for a claim
}

func (c *storageCheck) state(ctx context.Context) (storageState, error) {
	st := storageState{objects: map[string]storageObject{}, volumes: map[string]*corev1.PersistentVolume{}}
	add := func(kind string, m metav1.Object) {
		var owners []types.UID
		for _, o := range m.GetOwnerReferences() {
			owners = append(owners, o.UID)
		}
		st.objects[kind+"/"+m.GetName()] = storageObject{uid: m.GetUID(), owners: owners}
	}
	sets, err := c.side.client.AppsV1().StatefulSets(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, err
	}
	for i := range sets.Items {
		add("StatefulSet", &sets.Items[i])
	}
	pods, err := c.side.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, err
	}
	for i := range pods.Items {
		add("Pod", &pods.Items[i])
	}
	claims, err := c.side.client.CoreV1().PersistentVolumeClaims(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, err
	}
	for i := range claims.Items {
		add("PersistentVolumeClaim", &claims.Items[i])
		o := st.objects["PersistentVolumeClaim/"+claims.Items[i].Name]
		o.claim = &claims.Items[i]
		st.objects["PersistentVolumeClaim/"+claims.Items[i].Name] = o
	}
	revisions, err := c.side.client.AppsV1().ControllerRevisions(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, err
	}
	for i := range revisions.Items {
		add("ControllerRevision", &revisions.Items[i])
	}
	holder, err := c.side.client.CoreV1().ConfigMaps(c.ns).Get(ctx, "holder", metav1.GetOptions{})
	switch {
	case err == nil:
		add("ConfigMap", holder)
	case !apierrors.IsNotFound(err):
		return st, err
	}
	volumes, err := c.side.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: storageLabel + "=" + c.ns})
	if err != nil {
		return st, err
	}
	for i := range volumes.Items {
		st.volumes[volumes.Items[i].Name] = &volumes.Items[i]
	}
	return st, nil
}

// engineSees: the engine's graph holds every object of st, with the owners it has, and no
// queue holds work about them.
func (c *storageCheck) engineSees(st storageState) string {
	mine := map[types.UID]string{}
	for key, o := range st.objects {
		mine[o.uid] = key
		n, ok := c.engine.Node(o.uid)
		if !ok || !n.Observed {
			return "the engine has not seen " + key
		}
		var owners []types.UID
		for _, ref := range n.Owners {
			owners = append(owners, ref.UID)
		}
		if !slices.Equal(slices.Sorted(slices.Values(owners)), slices.Sorted(slices.Values(o.owners))) {
			return "the engine has not seen " + key + "'s owners"
		}
	}
	for _, q := range c.engine.SnapshotWithoutNodes().Queues {
		for _, it := range q.Items {
			if key, ok := mine[it.Object.UID]; ok && (it.Queued || it.InFlight || it.BackoffUntil != nil) {
				return key + " in " + string(q.Name)
			}
		}
	}
	return ""
}

// ready waits until the controllers have made every Pod and claim, bound every claim that
// has a volume, given the claims of whenDeleted: Delete sets their owner reference, and
// the engine has seen it all.
func (c *storageCheck) ready(ctx context.Context) error {
	why := ""
	done := func() bool {
		st, err := c.state(ctx)
		if err != nil {
			why = err.Error()
			return false
		}
		why = c.notReady(st)
		return why == ""
	}
	if err := testkit.Poll(ctx, settleLimit, done); err != nil {
		return fmt.Errorf("never ready (%s): %w", why, err)
	}
	return nil
}

func (c *storageCheck) notReady(st storageState) string {
	bound := func(claim string, v corev1.PersistentVolumeReclaimPolicy) string {
		o, ok := st.objects["PersistentVolumeClaim/"+claim]
		if !ok {
			return "no claim " + claim
		}
		if v != "" && o.claim.Status.Phase != corev1.ClaimBound {
			return "claim " + claim + " not bound"
		}
		return ""
	}
	if why := bound("scratch", c.s.scratch); why != "" {
		return why
	}
	for _, s := range c.s.sets {
		set, ok := st.objects["StatefulSet/"+s.name]
		if !ok {
			return "no StatefulSet " + s.name
		}
		for i, v := range s.volumes {
			claim := fmt.Sprintf("data-%s-%d", s.name, i)
			if _, ok := st.objects[fmt.Sprintf("Pod/%s-%d", s.name, i)]; !ok {
				return fmt.Sprintf("no Pod %s-%d", s.name, i)
			}
			if why := bound(claim, v); why != "" {
				return why
			}
			owned := slices.Contains(st.objects["PersistentVolumeClaim/"+claim].owners, set.uid)
			if owned != (s.whenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType) {
				return "claim " + claim + "'s owner reference to its StatefulSet not as its policy says"
			}
		}
	}
	return c.engineSees(st)
}

// round predicts a random delete (one or two of the StatefulSets, Pods, claims and the
// holder, not the StatefulSets' ControllerRevisions; Background, Foreground or Orphan), makes it, waits until what was predicted has
// happened (or the limit passed) and the cluster is quiet, and compares.
func (c *storageCheck) round(ctx context.Context, r *rand.Rand, res *predictResult) (what string, mismatches []string, err error) {
	before, err := c.state(ctx)
	if err != nil {
		return "", nil, err
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range before.objects {
			if !strings.HasPrefix(k, "ControllerRevision/") && !yield(k) { // watched, not deleted
				return
			}
		}
	})
	n := 1
	if r.IntN(4) == 0 {
		n = 2
	}
	var targets []types.UID
	var names []string
	for _, k := range r.Perm(len(keys))[:n] {
		targets = append(targets, before.objects[keys[k]].uid)
		names = append(names, keys[k])
	}
	policy := predictPolicies[r.IntN(len(predictPolicies))]
	what = fmt.Sprintf("%s; delete %s %s", c.s, strings.Join(names, "+"), policy)

	var pred gc.Prediction
	if n == 1 {
		var ok bool
		if pred, ok = c.engine.PredictDelete(targets[0], policy); !ok {
			return what, []string{"PredictDelete: the engine holds no observed " + names[0]}, nil
		}
	} else {
		var missing []types.UID
		if pred, missing = c.engine.PredictDeleteSet(targets, policy); len(missing) > 0 {
			return what, []string{fmt.Sprintf("PredictDeleteSet: missing %v", missing)}, nil
		}
	}
	cons := c.x.Consequences(ctx, pred, nil)
	if res.kinds == nil {
		res.kinds = map[string]int{}
	}
	res.kinds["storage"]++
	for k, yes := range map[string]bool{"storage with data loss": cons.DataLoss() > 0, "storage with recreated": len(cons.Recreated) > 0,
		"storage with left behind": len(cons.LeftBehind) > 0} {
		if yes {
			res.kinds[k]++
		}
	}
	what += "; predicted " + describeStorage(pred, cons)

	for i, uid := range targets {
		kind, name, _ := strings.Cut(names[i], "/")
		opts := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}}
		if err := c.delete(ctx, kind, name, opts); err != nil && !apierrors.IsNotFound(err) {
			return what, nil, fmt.Errorf("delete %s: %w", names[i], err)
		}
	}
	after, err := c.settle(ctx, pred, cons, false)
	if err != nil {
		return what, nil, err
	}
	// What a controller makes again at its next sync (or has not yet, in its backoff): the
	// check makes it sync, as any change of its object would.
	if nudged, err := c.nudge(ctx, cons, after); err != nil {
		return what, nil, err
	} else if nudged {
		if after, err = c.settle(ctx, pred, cons, true); err != nil {
			return what, nil, err
		}
	}
	return what, c.judgeStorage(pred, cons, before, after), nil
}

// nudge annotates each StatefulSet said to bring back an object not made again yet: an
// update its controller syncs on at once. That is the moment a next-sync recreation waits
// for; and an at-once one still missing then is the controller's retry backoff after a
// failed create (a loaded machine met one past the settling limit), which the update
// cuts short.
func (c *storageCheck) nudge(ctx context.Context, cons deletion.Consequences, st storageState) (bool, error) {
	nudged := false
	for _, rc := range cons.Recreated {
		if o, ok := st.objects[rc.Object.Kind+"/"+rc.Object.Name]; ok && o.uid != rc.Object.UID {
			continue
		}
		if rc.By.Kind != "StatefulSet" {
			return false, fmt.Errorf("the check cannot make %s %s sync", rc.By.Kind, rc.By.Name)
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"predictcheck.gcscope.io/nudged":%q}}}`, rc.Object.Name)
		if _, err := c.side.client.AppsV1().StatefulSets(c.ns).Patch(ctx, rc.By.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return false, fmt.Errorf("nudge StatefulSet %s: %w", rc.By.Name, err)
		}
		nudged = true
	}
	return nudged, nil
}

func (c *storageCheck) delete(ctx context.Context, kind, name string, opts metav1.DeleteOptions) error {
	switch kind {
	case "StatefulSet":
		return c.side.client.AppsV1().StatefulSets(c.ns).Delete(ctx, name, opts)
	case "Pod":
		return c.side.client.CoreV1().Pods(c.ns).Delete(ctx, name, opts)
	case "PersistentVolumeClaim":
		return c.side.client.CoreV1().PersistentVolumeClaims(c.ns).Delete(ctx, name, opts)
	case "ConfigMap":
		return c.side.client.CoreV1().ConfigMaps(c.ns).Delete(ctx, name, opts)
	}
	return errors.New("no such kind " + kind)
}

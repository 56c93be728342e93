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

func describeStorage(p gc.Prediction, cons deletion.Consequences) string {
	var parts []string
	for _, d := range p.Deleted {
		parts = append(parts, d.Object.Kind+"/"+d.Object.Name)
	}
	out := "deleted [" + strings.Join(parts, " ") + "]"
	parts = nil
	for _, v := range cons.Volumes {
		parts = append(parts, v.Claim.Name+":"+v.Verdict)
	}
	out += " volumes [" + strings.Join(parts, " ") + "]"
	parts = nil
	for _, rc := range cons.Recreated {
		parts = append(parts, rc.Object.Kind+"/"+rc.Object.Name)
	}
	out += " recreated [" + strings.Join(parts, " ") + "]"
	parts = nil
	for _, l := range cons.LeftBehind {
		parts = append(parts, l.Object.Kind+"/"+l.Object.Name)
	}
	return out + " left behind [" + strings.Join(parts, " ") + "]"
}

// settle waits until every object predicted deleted is gone, every one predicted to come
// back is there again (those at their controller's next sync only once synced), and every
// volume is as predicted; then until the engine has seen the cluster as it is and it stays
// so for settleChecks checks. A prediction that does not come true leaves it waiting for
// half of settleLimit, after which the cluster is judged as it is.
func (c *storageCheck) settle(ctx context.Context, p gc.Prediction, cons deletion.Consequences, synced bool) (storageState, error) {
	var st storageState
	var listErr error
	same, last := 0, ""
	done := func() bool {
		if st, listErr = c.state(ctx); listErr != nil {
			return true
		}
		if len(c.unfulfilled(p, cons, st, synced)) > 0 || c.engineSees(st) != "" {
			same = 0
			return false
		}
		now := st.String()
		if now != last {
			last, same = now, 0
		}
		same++
		return same >= settleChecks
	}
	if err := testkit.PollEvery(ctx, settlePace, settleLimit/2, done); err != nil && ctx.Err() != nil {
		return st, err
	}
	return st, listErr
}

func (s storageState) String() string {
	var lines []string
	for k, o := range s.objects {
		lines = append(lines, fmt.Sprintf("%s %s %v", k, o.uid, o.owners))
	}
	for name, v := range s.volumes {
		lines = append(lines, fmt.Sprintf("PersistentVolume/%s %s", name, v.Status.Phase))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// unfulfilled says what of the prediction the cluster does not show yet (what comes back
// at a controller's next sync, only once synced).
func (c *storageCheck) unfulfilled(p gc.Prediction, cons deletion.Consequences, st storageState, synced bool) []string {
	var out []string
	present := map[types.UID]bool{}
	for _, o := range st.objects {
		present[o.uid] = true
	}
	for _, d := range p.Deleted {
		if present[d.Object.UID] {
			out = append(out, d.Object.Kind+"/"+d.Object.Name+" still there")
		}
	}
	for _, rc := range cons.Recreated {
		if rc.When == deletion.RecreatedAtNextSync && !synced {
			continue
		}
		if o, ok := st.objects[rc.Object.Kind+"/"+rc.Object.Name]; !ok || o.uid == rc.Object.UID {
			out = append(out, rc.Object.Kind+"/"+rc.Object.Name+" not made again")
		}
	}
	for _, v := range cons.Volumes {
		if why := c.volumeAsPredicted(v, st); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// volumeAsPredicted says how claim's volume differs from its predicted fate: data loss,
// the volume and its directory gone; retained, both there, Released; kept, the claim
// there, its volume bound; none, the claim had no volume.
func (c *storageCheck) volumeAsPredicted(v deletion.VolumeFate, st storageState) string {
	name := c.volumeName(v.Claim.Name)
	pv, there := st.volumes[name]
	_, statErr := os.Stat(filepath.Join(c.volumePath(v.Claim.Name), "data"))
	onDisk := statErr == nil
	say := func(format string, args ...any) string {
		return fmt.Sprintf("claim %s's volume, predicted %s: ", v.Claim.Name, v.Verdict) + fmt.Sprintf(format, args...)
	}
	switch v.Verdict {
	case deletion.VolumeDataLoss:
		if there || onDisk {
			return say("the PersistentVolume there %v, its data on disk %v", there, onDisk)
		}
	case deletion.VolumeRetained:
		if !there || pv.Status.Phase != corev1.VolumeReleased || !onDisk {
			return say("the PersistentVolume there %v (%s), its data on disk %v", there, phaseOf(pv), onDisk)
		}
	case deletion.VolumeKept:
		claim, ok := st.objects["PersistentVolumeClaim/"+v.Claim.Name]
		if !ok || claim.uid != v.Claim.UID {
			return say("the claim is gone")
		}
		if claim.claim.Spec.VolumeName != "" && (!there || pv.Status.Phase != corev1.VolumeBound || !onDisk) {
			return say("the PersistentVolume there %v (%s), its data on disk %v", there, phaseOf(pv), onDisk)
		}
	case deletion.VolumeNone:
		if there {
			return say("it had one, %s", name)
		}
	default:
		return say("not a verdict the check expects (%s)", v.Says)
	}
	return ""
}

func phaseOf(pv *corev1.PersistentVolume) corev1.PersistentVolumePhase {
	if pv == nil {
		return "absent"
	}
	return pv.Status.Phase
}

// judgeStorage compares a prediction and its consequences with what the cluster did:
//   - every object predicted deleted is gone; every other object is still there (the same
//     uid), as is every object said to be left behind;
//   - an object predicted to come back is there again, with a new uid, and no other object
//     that went is made again;
//   - every claim deleted has its volume's fate said, and each is as said
//     (volumeAsPredicted); every other volume is still there, with its data.
func (c *storageCheck) judgeStorage(p gc.Prediction, cons deletion.Consequences, before, after storageState) []string {
	bad := c.unfulfilled(p, cons, after, true)
	deleted := map[types.UID]bool{}
	for _, d := range p.Deleted {
		deleted[d.Object.UID] = true
	}
	recreated := map[string]bool{}
	for _, rc := range cons.Recreated {
		recreated[rc.Object.Kind+"/"+rc.Object.Name] = true
	}
	for key, o := range before.objects {
		now, ok := after.objects[key]
		switch {
		case !deleted[o.uid] && (!ok || now.uid != o.uid):
			bad = append(bad, key+" went, though not predicted to")
		case deleted[o.uid] && !recreated[key] && ok:
			bad = append(bad, key+" was made again, though not predicted to come back")
		}
	}
	said := map[types.UID]bool{}
	for _, l := range cons.LeftBehind {
		if said[l.Object.UID] {
			bad = append(bad, fmt.Sprintf("%s/%s is said to be left behind twice", l.Object.Kind, l.Object.Name))
		}
		said[l.Object.UID] = true
		if o, ok := after.objects[l.Object.Kind+"/"+l.Object.Name]; !ok || o.uid != l.Object.UID {
			bad = append(bad, fmt.Sprintf("%s/%s, said to be left behind (%s), is gone", l.Object.Kind, l.Object.Name, l.Reason))
		}
	}
	fated := map[string]bool{}
	for _, v := range cons.Volumes {
		fated[v.Claim.Name] = true
	}
	for _, d := range p.Deleted {
		if d.Object.Kind == "PersistentVolumeClaim" && !fated[d.Object.Name] {
			bad = append(bad, "claim "+d.Object.Name+" is deleted, but its volume's fate is not said")
		}
	}
	for name := range before.volumes {
		claim := strings.TrimPrefix(name, c.ns+"-")
		if fated[claim] {
			continue
		}
		if _, ok := after.volumes[name]; !ok {
			bad = append(bad, "PersistentVolume "+name+" went, though no fate of it was said")
		}
	}
	if cons.Unread != "" {
		bad = append(bad, "consequences unread: "+cons.Unread)
	}
	return bad
}

package difftest

// How the storage check judges a prediction against what came of the delete: gone,
// recreated, left behind, and each volume's fate.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/deletion"
	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

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

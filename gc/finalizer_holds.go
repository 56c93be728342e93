package gc

// Finalizers that are not the collector's: whose they are, and the kubectl command that
// releases one by hand.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// isCollectorFinalizer: foregroundDeletion and orphan are the collector's own steps,
// never another controller's hold.
func isCollectorFinalizer(f string) bool {
	return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
}

// knownFinalizers are the finalizers of Kubernetes' own components: who removes each, and
// when.
var knownFinalizers = map[string]string{
	metav1.FinalizerDeleteDependents:              "the garbage collector itself removes it once no blocking dependent remains (a foreground deletion, not a hold)",
	metav1.FinalizerOrphanDependents:              "the garbage collector itself removes it once it has taken this owner out of every dependent (not a hold)",
	"kubernetes.io/pv-protection":                 "the pv-protection controller in kube-controller-manager removes it once no PersistentVolumeClaim is bound to the volume",
	"kubernetes.io/pvc-protection":                "the pvc-protection controller in kube-controller-manager removes it once no Pod uses the claim",
	"customresourcecleanup.apiextensions.k8s.io":  "the apiextensions-apiserver (in kube-apiserver) removes it once every custom resource of this definition is deleted",
	"batch.kubernetes.io/job-tracking":            "the Job controller in kube-controller-manager removes it once it has counted the Pod's outcome",
	"service.kubernetes.io/load-balancer-cleanup": "the service controller (in the cloud-controller-manager) removes it once the cloud load balancer is deleted",
}

// finalizerOwner says who usually removes finalizer f, and when.
func finalizerOwner(f string) string {
	if s, ok := knownFinalizers[f]; ok {
		return s
	}
	prefix, _, ok := strings.Cut(f, "/")
	switch {
	case strings.HasPrefix(f, "external-attacher/"):
		return "the CSI external-attacher of the volume's driver removes it once the volume is detached"
	case strings.HasPrefix(f, "snapshot.storage.kubernetes.io/"):
		return "the CSI snapshot-controller removes it once the snapshot is no longer in use"
	case ok && (prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") || strings.HasSuffix(prefix, ".k8s.io")):
		return "a Kubernetes component (" + prefix + ") removes it when its own work on the object is done"
	case ok:
		return "the controller that added it removes it when its own clean-up is done; by convention its prefix, " + prefix + ", names who that is"
	}
	return "the controller that added it removes it when its own clean-up is done (the name has no domain prefix to tell which)"
}

// releaseCommand is the kubectl command that removes finalizer f at index i of o by hand.
// The JSON patch tests the value before removing it, so it fails if the list changed
// instead of removing another finalizer.
func (gc *GarbageCollector) releaseCommand(o ObjectRef, f string, i int) string {
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value string `json:"value,omitempty"`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode([]op{{Op: "test", Path: path, Value: f}, {Op: "remove", Path: path}})
	resource := strings.ToLower(o.Kind)
	gv, _ := schema.ParseGroupVersion(o.APIVersion)
	if gvr, _, err := gc.apiResource(o.APIVersion, o.Kind); err == nil {
		resource = gvr.Resource
	}
	if gv.Group != "" {
		resource += "." + gv.Group // resource.group: unambiguous across API groups
	}
	cmd := "kubectl patch " + shellQuote(resource) + " " + shellQuote(o.Name)
	if o.Namespace != "" {
		cmd += " -n " + shellQuote(o.Namespace)
	}
	return cmd + " --type=json -p " + shellQuote(strings.TrimSpace(buf.String()))
}

// shellQuote quotes s for a POSIX shell, unless it needs none.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

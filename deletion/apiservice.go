package deletion

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/gcscope/gcscope/gc"
)

var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// APIServiceReport is an aggregated API that is not available, and why.
type APIServiceReport struct {
	Name         string `json:"name"`
	GroupVersion string `json:"groupVersion"`
	// Available is its Available condition's status, reason and message.
	Available string     `json:"available"`
	Reason    string     `json:"reason,omitempty"`
	Message   string     `json:"message,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	// Service is the Service it points to ("namespace/name"); ServiceExists and
	// ReadyEndpoints say whether anything can answer there.
	Service        string `json:"service,omitempty"`
	ServiceExists  bool   `json:"serviceExists"`
	ReadyEndpoints int    `json:"readyEndpoints"`
	// Problem says in a few words what is wrong (empty: nothing found wrong), and Next what
	// would fix it.
	Problem string `json:"problem,omitempty"`
	Next    string `json:"next,omitempty"`
	// Hidden: the reader may not see this APIService; only its group version is told.
	Hidden bool `json:"hidden,omitempty"`

	uid types.UID // the APIService's, for the reader's visibility
}

// APIServices reports the APIServices that are not Available, and those of the group
// versions that fail discovery: their condition, the Service each points to, whether it
// exists and how many ready endpoints it has. The cluster is read once per
// apiServicesTTL for every reader (the page polls health every few seconds); each reader
// is told only of what they may list: an APIService they may not see by its group
// version alone, a Service in a namespace they may not list not at all.
func (x *Explainer) APIServices(ctx context.Context, failures map[string]gc.GroupFailure, visible Visible) []APIServiceReport {
	failing := slices.Sorted(maps.Keys(failures))
	all, ok := x.apiServices.get(ctx, strings.Join(failing, ","), func(ctx context.Context) []APIServiceReport {
		return x.readAPIServices(ctx, failures)
	})
	if !ok {
		return nil
	}
	out := make([]APIServiceReport, 0, len(all))
	for _, r := range all {
		switch {
		case r.uid != "" && !visible.sees(gc.ObjectRef{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: r.Name, UID: r.uid}):
			r = APIServiceReport{Name: r.Name, GroupVersion: r.GroupVersion, Available: r.Available, Hidden: true,
				Problem: "it is not available", Next: "ask a cluster administrator: you may not read APIServices"}
		case r.Service != "" && !seesService(visible, r.Service):
			ns, _, _ := strings.Cut(r.Service, "/")
			r.ServiceExists, r.ReadyEndpoints = false, 0
			r.Problem = "it is not available: " + r.Message
			r.Next = "ask a cluster administrator: you may not list the Services and EndpointSlices of namespace " + ns + ", where its Service " + r.Service + " is"
		}
		out = append(out, r)
	}
	return out
}

// seesService: the reader may list Services and EndpointSlices in service's namespace.
func seesService(visible Visible, service string) bool {
	ns, name, _ := strings.Cut(service, "/")
	return visible.sees(gc.ObjectRef{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: name}) &&
		visible.sees(gc.ObjectRef{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice", Namespace: ns, Name: name})
}

// apiServicesTTL is how long the APIServices read are reused.
const apiServicesTTL = 5 * time.Second

// readAPIServices reads the APIServices at fault and their Services (communicates with
// the server: a LIST, and a GET and a LIST for each APIService at fault).
func (x *Explainer) readAPIServices(ctx context.Context, failures map[string]gc.GroupFailure) []APIServiceReport {
	list, err := x.dynamic.Resource(apiServicesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		var out []APIServiceReport
		for gv, f := range failures {
			out = append(out, APIServiceReport{Name: apiServiceName(gv), GroupVersion: gv, Available: "Unknown",
				Problem: "discovery fails: " + f.Error, Message: "cannot read APIServices: " + err.Error()})
		}
		slices.SortFunc(out, func(a, b APIServiceReport) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	var out []APIServiceReport
	for _, item := range list.Items {
		var a apiregistrationv1.APIService
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &a) != nil {
			continue
		}
		gv := schema.GroupVersion{Group: a.Spec.Group, Version: a.Spec.Version}.String()
		cond := availableOf(&a)
		_, failing := failures[gv]
		if cond.Status == apiregistrationv1.ConditionTrue && !failing {
			continue
		}
		r := APIServiceReport{Name: a.Name, GroupVersion: gv, Available: string(cond.Status), Reason: cond.Reason, Message: cond.Message, uid: a.UID}
		if !cond.LastTransitionTime.IsZero() {
			t := cond.LastTransitionTime.Time
			r.Since = &t
		}
		x.diagnose(ctx, &a, &r)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b APIServiceReport) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// apiServiceName is the name an APIService of group version gv has by convention.
func apiServiceName(gv string) string {
	g, err := schema.ParseGroupVersion(gv)
	if err != nil || g.Group == "" {
		return gv
	}
	return g.Version + "." + g.Group
}

func availableOf(a *apiregistrationv1.APIService) apiregistrationv1.APIServiceCondition {
	for _, c := range a.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			return c
		}
	}
	return apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionUnknown}
}

// diagnose fills in the Service the APIService points to, and says what is wrong.
func (x *Explainer) diagnose(ctx context.Context, a *apiregistrationv1.APIService, r *APIServiceReport) {
	svc := a.Spec.Service
	if svc == nil {
		r.Problem = "it is served by the kube-apiserver itself, and not available: " + r.Message
		r.Next = "look at the kube-apiserver's log"
		return
	}
	r.Service = svc.Namespace + "/" + svc.Name
	_, err := x.kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		r.Problem = "its Service " + r.Service + " does not exist"
		r.Next = fmt.Sprintf("create Service %s (the API's server is not installed or was removed), or delete the APIService: kubectl delete apiservice %s", r.Service, a.Name)
		return
	case err != nil:
		r.Problem = "its Service " + r.Service + " cannot be read: " + err.Error()
		r.Next = "look at APIService " + a.Name + " and its Service"
		return
	}
	r.ServiceExists = true
	slices, err := x.kube.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
	if err == nil {
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					r.ReadyEndpoints++
				}
			}
		}
	}
	switch {
	case err == nil && r.ReadyEndpoints == 0:
		r.Problem = "its Service " + r.Service + " has no ready endpoints"
		r.Next = "start the API's server behind Service " + r.Service + " (its Pods are missing or not ready), or delete the APIService: kubectl delete apiservice " + a.Name
	case a.Status.Conditions == nil || r.Available != string(apiregistrationv1.ConditionTrue):
		r.Problem = "it is not available: " + r.Message
		r.Next = "make the API's server behind Service " + r.Service + " answer (its certificate, its port, its health)"
	}
}

package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkChartAt150k measures the memory the chart's resources are sized for: gcscope
// run as in TestShadowModeWithTheChartsToken (the slim build, the default Deployment's args
// and GOMEMLIMIT, the ServiceAccount's token) on the scale benchmark's cluster
// (docs/performance.md: 5,000 Deployments, 5,000 ReplicaSets, 150,000 Pods, 5,000
// ConfigMaps, 5,000 Secrets), reading its resident memory once ready, 10 s later, and after
// each of two full reads of the graph (limit 100000; the page's snapshot is of that size).
// It fails if the process outgrows the Deployment's memory limit. It runs once whatever b.N
// asks (loading takes minutes):
//
//	go test -run '^$' -bench BenchmarkChartAt150k -benchtime 1x -timeout 30m ./deploy/
//
// GCSCOPE_SCALE_PODS sets the Pods (default 150000; 30 per ReplicaSet).
func BenchmarkChartAt150k(b *testing.B) {
	pods := 150_000
	if v := os.Getenv("GCSCOPE_SCALE_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 30 {
			b.Fatalf("GCSCOPE_SCALE_PODS=%q: want a number ≥ 30", v)
		}
		pods = n
	}
	ctx := context.Background()
	m := load(b, "gcscope.yaml")
	installRBAC(b, m)
	saToken := token(b, chartNamespace, chartSA)

	cfg := kube.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0 // unbounded: the load is bounded by etcd's writes
	cs := kubernetes.NewForConfigOrDie(cfg)
	const ns = "scale"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	objects, err := loadScale(ctx, cs, ns, pods)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("%d objects loaded in %v\n", objects, time.Since(start).Round(time.Second))

	b.ResetTimer()
	started := time.Now()
	p := startGcscope(b, m, saToken)
	p.waitReady(b, m)
	readyAfter := time.Since(started)
	rssReady := p.rssBytes()
	time.Sleep(10 * time.Second) // the benchmark's pacing: the RSS ten seconds after ready is what it reports
	rssSettled := p.rssBytes()
	admin := kube.RESTConfig().BearerToken
	var rssRead uint64
	var size int
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, p.base+"/api/v1/graph?limit=100000", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := p.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		buf := make([]byte, 1<<20)
		for {
			k, err := resp.Body.Read(buf)
			n += int64(k)
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("/api/v1/graph: %d", resp.StatusCode)
		}
		size = int(n)
		rssRead = max(rssRead, p.rssBytes())
	}
	b.StopTimer()
	limit := m.deployment(b).Spec.Template.Spec.Containers[0].Resources.Limits.Memory().Value()
	fmt.Printf("gcscope ready after %v\nRSS ready %d MiB, 10 s later %d MiB, after two graph reads (%.1f MiB of JSON each) %d MiB; limit %d MiB\n",
		readyAfter.Round(100*time.Millisecond), rssReady>>20, rssSettled>>20, float64(size)/(1<<20), rssRead>>20, limit>>20)
	b.ReportMetric(float64(rssSettled>>20), "rss-synced-MiB")
	b.ReportMetric(float64(rssRead>>20), "rss-after-reads-MiB")
	if int64(rssRead) >= limit {
		b.Errorf("gcscope's RSS reached %d MiB, the chart's memory limit is %d MiB", rssRead>>20, limit>>20)
	}
}

// loadScale creates the scale benchmark's objects with 64 writers and returns how many.
func loadScale(ctx context.Context, cs kubernetes.Interface, ns string, pods int) (int, error) {
	const perRS = 30
	apps := pods / perRS
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}
	yes := true
	controlledBy := func(apiVersion, kind string, o metav1.Object) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}}
	}
	replicaSets := make([]*appsv1.ReplicaSet, apps)
	err := parallel(apps, func(i int) error {
		name := fmt.Sprintf("app-%05d", i)
		labels := map[string]string{"app": name}
		sel := &metav1.LabelSelector{MatchLabels: labels}
		tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
		d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		replicaSets[i], err = cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-rs", OwnerReferences: controlledBy("apps/v1", "Deployment", d)},
			Spec:       appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	err = parallel(apps*perRS, func(i int) error {
		rs := replicaSets[i/perRS]
		_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%02d", rs.Name, i%perRS), Labels: rs.Spec.Template.Labels,
			OwnerReferences: controlledBy("apps/v1", "ReplicaSet", rs)}, Spec: spec}, metav1.CreateOptions{})
		return err
	})
	return apps*4 + apps*perRS, err
}

// parallel runs f(0..n-1) on 64 goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// rssBytes is the process's resident memory.
func (p *gcscopeProc) rssBytes() uint64 {
	v := p.rss()
	kb, err := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}

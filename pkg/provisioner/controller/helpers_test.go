package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	capnfake "capn.dev/capn/pkg/generated/clientset/versioned/fake"
	listers "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// counting wraps a Management and records every call, so tests can assert
// exactly which writes a sync made.
type counting struct {
	Management
	mu            sync.Mutex
	reads, writes []string
}

func (c *counting) note(list *[]string, verb string, o builders.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*list = append(*list, verb+" "+kindName(o))
}

func kindName(o builders.Object) string {
	return o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetName()
}

func (c *counting) Get(ctx context.Context, p builders.Object) (builders.Object, error) {
	c.note(&c.reads, "get", p)
	return c.Management.Get(ctx, p)
}

func (c *counting) Apply(ctx context.Context, manager string, o builders.Object) (builders.Object, error) {
	c.note(&c.writes, "apply", o)
	return c.Management.Apply(ctx, manager, o)
}

func (c *counting) Delete(ctx context.Context, o builders.Object) error {
	c.note(&c.writes, "delete", o)
	return c.Management.Delete(ctx, o)
}

func (c *counting) StopPods(ctx context.Context, namespace string, selector labels.Selector) (int, error) {
	c.mu.Lock()
	c.reads = append(c.reads, "stop pods in "+namespace)
	c.mu.Unlock()
	return c.Management.StopPods(ctx, namespace, selector)
}

func (c *counting) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads, c.writes = nil, nil
}

// fixture is a controller over fake clients. Its lister is fed from the
// fake capn clientset after every sync, as an informer would be.
type fixture struct {
	t        *testing.T
	kube     *kubefake.Clientset
	capn     *capnfake.Clientset
	mgmt     *counting
	indexer  cache.Indexer
	recorder *record.FakeRecorder
	c        *ClusterController
	nc       *v1alpha1.NestedCluster
	// tenant plays the tenant apiserver for the RBAC bootstrap;
	// tenantServers records every URL the controller dialled.
	tenant        *kubefake.Clientset
	tenantServers []string
	serversMu     sync.Mutex // tenantServers is appended to by bootstrap goroutines
}

var testNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// testUID is testCluster's UID, as the API server would have assigned it.
const testUID = "6f1c2b9e-3d4a-4e5f-8a7b-0c1d2e3f4a5b"

// testCluster is a NestedCluster as the API server stores it: defaulted.
func testCluster(mutate ...func(*v1alpha1.NestedCluster)) *v1alpha1.NestedCluster {
	nc := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "demo", Generation: 1, UID: testUID}}
	nc.Spec.Version = "v1.37.2"
	v1alpha1.SetObjectDefaults_NestedCluster(nc)
	for _, m := range mutate {
		m(nc)
	}
	// What a mutation leaves out the API server would fill in; the
	// controller no longer defaults on its side.
	v1alpha1.SetObjectDefaults_NestedCluster(nc)
	return nc
}

// managementNamespace is nc's UID-derived namespace name (the one a new
// cluster gets).
func managementNamespace(nc *v1alpha1.NestedCluster) string {
	return provisioner.ManagementNamespace(nc)
}

func newFixture(t *testing.T, nc *v1alpha1.NestedCluster, kubeObjects ...builders.Object) *fixture {
	t.Helper()
	kube := kubefake.NewClientset()
	for _, o := range kubeObjects {
		if err := kube.Tracker().Add(o); err != nil {
			t.Fatalf("seeding %s: %v", kindName(o), err)
		}
	}
	f := &fixture{
		t:    t,
		kube: kube,
		// NewSimpleClientset: the capn fake has no SSA schema, and the
		// controller never applies NestedClusters.
		capn: capnfake.NewSimpleClientset(nc), //nolint:staticcheck

		mgmt:     &counting{Management: NewManagement(kube)},
		indexer:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		recorder: record.NewFakeRecorder(1000),
		nc:       nc,
		tenant:   kubefake.NewClientset(),
	}
	if err := f.indexer.Add(nc); err != nil {
		t.Fatal(err)
	}
	e := &env{capn: f.capn, mgmt: f.mgmt, recorder: f.recorder, now: func() time.Time { return testNow },
		cfg: Settings{CertRenewalThreshold: pki.DefaultRenewalThreshold}.Complete()}
	tenantClient := func(server string, ca *pki.CA, _ time.Time) (kubernetes.Interface, error) {
		f.serversMu.Lock()
		f.tenantServers = append(f.tenantServers, server)
		f.serversMu.Unlock()
		return f.tenant, nil
	}
	sh := &Shared{env: e, seen: &keySet{}, etcd: &etcdAccess{env: e}, activity: newActivityMonitor(e, tenantClient, nil), tenantClient: tenantClient}
	f.c = newClusterSteps(sh, listers.NewNestedClusterLister(f.indexer), Options{}, nil)
	return f
}

// sync runs one sync and refreshes the lister; it fails the test on error.
func (f *fixture) sync() time.Duration {
	f.t.Helper()
	after, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	if err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	f.refresh()
	return after
}

// syncTenant runs a sync, waits for the tenant bootstrap it may have
// started, and syncs again so status reflects its outcome (the controller
// re-enqueues for that; the fixture has no queue).
func (f *fixture) syncTenant() time.Duration {
	f.t.Helper()
	f.sync()
	f.c.tenants.tenantWG.Wait()
	return f.sync()
}

func (f *fixture) refresh() {
	f.t.Helper()
	cur, err := f.capn.CapnV1alpha1().NestedClusters(f.nc.Namespace).Get(context.Background(), f.nc.Name, metav1.GetOptions{})
	if err != nil {
		if err := f.indexer.Delete(f.nc); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	f.nc = cur
	if err := f.indexer.Update(cur); err != nil {
		f.t.Fatal(err)
	}
}

// setCluster replaces the stored NestedCluster (a user's edit).
func (f *fixture) setCluster(mutate func(*v1alpha1.NestedCluster)) {
	f.t.Helper()
	nc := f.nc.DeepCopy()
	mutate(nc)
	v1alpha1.SetObjectDefaults_NestedCluster(nc) // as the API server does on update
	if _, err := f.capn.CapnV1alpha1().NestedClusters(nc.Namespace).Update(context.Background(), nc, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// capnWrites counts create/update/patch/delete actions on NestedClusters.
func (f *fixture) capnWrites() int {
	n := 0
	for _, a := range f.capn.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			n++
		}
	}
	return n
}

// markReady plays the management cluster's workload controllers: every
// Deployment and StatefulSet reports all replicas ready and updated.
func (f *fixture) markReady() {
	f.t.Helper()
	ctx := context.Background()
	ns := managementNamespace(f.nc)
	deps, _ := f.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	for _, d := range deps.Items {
		r := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{Replicas: r, ReadyReplicas: r, UpdatedReplicas: r, AvailableReplicas: r}
		if _, err := f.kube.AppsV1().Deployments(ns).UpdateStatus(ctx, &d, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
	sts, _ := f.kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	for _, s := range sts.Items {
		r := *s.Spec.Replicas
		s.Status = appsv1.StatefulSetStatus{Replicas: r, ReadyReplicas: r, UpdatedReplicas: r, AvailableReplicas: r}
		if _, err := f.kube.AppsV1().StatefulSets(ns).UpdateStatus(ctx, &s, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
}

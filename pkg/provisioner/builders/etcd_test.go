package builders

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

func TestEtcd(t *testing.T) {
	argsOf := func(objs []Object) []string {
		return find[*appsv1.StatefulSet](objs, provisioner.EtcdName).Spec.Template.Spec.Containers[0].Args
	}
	one := argsOf(build(t, cluster()))
	if !slices.Contains(one, "--initial-cluster=$(CAPN_POD_NAME)=https://$(CAPN_POD_IP):2380") {
		t.Errorf("single member must bootstrap on its pod IP: %v", one)
	}
	three := build(t, cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Etcd.Managed.Replicas = ptr.To[int32](3)
		nc.Spec.Etcd.Managed.Storage = v1alpha1.EtcdStorage{Type: v1alpha1.EtcdStoragePersistentVolumeClaim, Size: ptr.To(resource.MustParse("2Gi"))}
	}))
	d := "etcd-headless." + provisioner.ManagementNamespace(cluster()) + ".svc:2380"
	want := "--initial-cluster=etcd-0=https://etcd-0." + d + ",etcd-1=https://etcd-1." + d + ",etcd-2=https://etcd-2." + d
	if !slices.Contains(argsOf(three), want) || !slices.Contains(argsOf(three), "--quota-backend-bytes=1073741824") {
		t.Errorf("three members: args %v, want %s and a quota of half the volume", argsOf(three), want)
	}
	sts := find[*appsv1.StatefulSet](three, provisioner.EtcdName)
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("statefulset %+v: want one claim template and parallel start", sts.Spec)
	}
	mem := find[*appsv1.StatefulSet](build(t, cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Etcd.Managed.Storage = v1alpha1.EtcdStorage{Type: v1alpha1.EtcdStorageMemory, Size: ptr.To(resource.MustParse("256Mi"))}
	})), provisioner.EtcdName)
	var ed *corev1.EmptyDirVolumeSource
	for _, v := range mem.Spec.Template.Spec.Volumes {
		if v.Name == etcdDataVolume {
			ed = v.EmptyDir
		}
	}
	if ed == nil || ed.Medium != corev1.StorageMediumMemory || ed.SizeLimit.String() != "256Mi" {
		t.Errorf("memory storage volume = %+v", ed)
	}
}

func TestExternalEtcd(t *testing.T) {
	objs := build(t, cluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Etcd = v1alpha1.EtcdSpec{External: &v1alpha1.ExternalEtcd{
			Endpoints:   []string{"https://a:2379", "https://b:2379"},
			CASecretRef: v1alpha1.SecretReference{Name: "ca"}, ClientSecretRef: v1alpha1.SecretReference{Name: "cl"}, Prefix: "/x",
		}}
	}))
	for _, o := range objs {
		if o.GetLabels()[v1alpha1.ComponentLabel] == v1alpha1.ComponentEtcd {
			t.Errorf("external etcd: unexpected %T %s", o, o.GetName())
		}
	}
	spec := find[*appsv1.Deployment](objs, provisioner.APIServerName).Spec.Template.Spec
	args := spec.Containers[0].Args
	if !slices.Contains(args, "--etcd-servers=https://a:2379,https://b:2379") || !slices.Contains(args, "--etcd-prefix=/x") {
		t.Errorf("args %v: want the external endpoints and prefix", args)
	}
	secrets := map[string]bool{}
	for _, s := range spec.Volumes[0].Projected.Sources {
		secrets[s.Secret.Name] = true
	}
	if !secrets[provisioner.SecretExternalEtcdCA] || !secrets[provisioner.SecretExternalEtcdClient] || secrets[provisioner.SecretEtcdCA] {
		t.Errorf("projected secrets %v: want the external-etcd copies only", secrets)
	}
}

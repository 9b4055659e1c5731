package builders

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

const etcdDataVolume = "data"

// Etcd builds a managed etcd: a headless Service that gives members stable
// names, a client Service for kube-apiserver, a StatefulSet and, for three
// members, a PodDisruptionBudget that keeps quorum. External etcd yields no
// objects.
//
// Member addressing: one member advertises its pod IP for peers (it has no
// peers to reach, and the dev node has no cluster DNS) and the client
// Service for clients. Three members find each other as
// etcd-N.etcd-headless.<ns>.svc, which needs cluster DNS in the management
// cluster; there is no DNS-free way to bootstrap a multi-member etcd whose
// pod IPs are unknown in advance. (The pod-IP peer URL assumes IPv4 pods:
// an IPv6 address would need brackets the downward API does not add.)
func Etcd(nc *v1alpha1.NestedCluster, p Params) ([]Object, error) {
	m := nc.Spec.Etcd.Managed
	if m == nil {
		return nil, nil
	}
	replicas, err := replicasOf(m.Replicas, "spec.etcd.managed.replicas")
	if err != nil {
		return nil, err
	}
	ns := provisioner.NamespaceOf(nc, p.Addresses())
	in := profiles.Params{EtcdClusterToken: ns}
	podIP, podName := "$("+profiles.EnvPodIP+")", "$("+profiles.EnvPodName+")"
	if replicas == 1 {
		peer := fmt.Sprintf("https://%s:%d", podIP, profiles.EtcdPeerPort)
		in.EtcdInitialCluster = podName + "=" + peer
		in.EtcdInitialAdvertisePeerURLs = peer
		in.EtcdAdvertiseClientURLs = provisioner.EtcdClientURL(nc, p.Addresses(), profiles.EtcdClientPort)
	} else {
		domain := provisioner.EtcdHeadlessServiceName + "." + ns + ".svc"
		members := make([]string, replicas)
		for i := range members {
			member := fmt.Sprintf("%s-%d", provisioner.EtcdName, i)
			members[i] = fmt.Sprintf("%s=https://%s.%s:%d", member, member, domain, profiles.EtcdPeerPort)
		}
		in.EtcdInitialCluster = strings.Join(members, ",")
		in.EtcdInitialAdvertisePeerURLs = fmt.Sprintf("https://%s.%s:%d", podName, domain, profiles.EtcdPeerPort)
		in.EtcdAdvertiseClientURLs = fmt.Sprintf("https://%s.%s:%d", podName, domain, profiles.EtcdClientPort)
	}

	var data corev1.Volume
	var claims []corev1.PersistentVolumeClaim
	size := m.Storage.Size
	switch m.Storage.Type {
	case v1alpha1.EtcdStorageMemory:
		data = corev1.Volume{Name: etcdDataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: size}}}
	case v1alpha1.EtcdStorageEmptyDir:
		data = corev1.Volume{Name: etcdDataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: size}}}
	case v1alpha1.EtcdStoragePersistentVolumeClaim:
		if size == nil {
			return nil, fmt.Errorf("spec.etcd.managed.storage.size is required for %s", m.Storage.Type)
		}
		claims = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: etcdDataVolume, Labels: provisioner.ComponentLabels(nc, v1alpha1.ComponentEtcd)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *size}},
				StorageClassName: m.Storage.StorageClassName,
			},
		}}
	default:
		return nil, fmt.Errorf("spec.etcd.managed.storage.type %q is not supported", m.Storage.Type)
	}
	// A full volume kills etcd (and an emptyDir over its sizeLimit gets the
	// pod evicted with the data); at half the volume, etcd raises its
	// NOSPACE alarm and turns read-only instead, with room for the WAL,
	// snapshots and a defragmentation.
	if size != nil {
		in.EtcdQuotaBackendBytes = size.Value() / 2
	}

	image := m.Image
	if image == "" {
		image = p.EtcdImage
	}
	if image == "" {
		image = DefaultEtcdImage
	}
	c := corev1.Container{
		Name:    v1alpha1.ComponentEtcd,
		Image:   image,
		Command: []string{"etcd"},
		Args:    profiles.EtcdFlags(in).Args(),
		Ports: []corev1.ContainerPort{
			tcpPort("client", profiles.EtcdClientPort), tcpPort("peer", profiles.EtcdPeerPort), tcpPort("metrics", profiles.EtcdMetricsPort),
		},
		// /readyz needs quorum, so three members must all be started
		// before any is ready: the startup probe allows for that.
		StartupProbe:   startupProbe(httpProbe("/readyz", profiles.EtcdMetricsPort, 10, 30), p.revision(v1alpha1.ComponentEtcd), 300),
		LivenessProbe:  httpProbe("/livez", profiles.EtcdMetricsPort, 10, 8),
		ReadinessProbe: httpProbe("/readyz", profiles.EtcdMetricsPort, 5, 3),
		VolumeMounts: []corev1.VolumeMount{
			{Name: etcdDataVolume, MountPath: profiles.EtcdDataMount},
			{Name: "pki", MountPath: profiles.EtcdPKIDir, ReadOnly: true},
		},
	}
	pki := pkiVolume(v1alpha1.ComponentEtcd, p.revision(v1alpha1.ComponentEtcd), etcdFiles)
	volumes := []corev1.Volume{pki}
	if claims == nil {
		volumes = append(volumes, data)
	}
	spec := podSpec(nc, p, v1alpha1.ComponentEtcd, c, volumes)
	if m.Resources != nil {
		spec.Containers[0].Resources = *m.Resources.DeepCopy()
	}
	// No certs-hash or version annotation: etcd re-reads its certificates
	// on every handshake, and a version upgrade must not roll it.
	tpl := podTemplate(nc, v1alpha1.ComponentEtcd, nil, spec)
	place(&tpl.Spec, p.Placement)

	selector := provisioner.SelectorLabels(nc, v1alpha1.ComponentEtcd)
	stsMeta := objectMeta(nc, p, provisioner.EtcdName, v1alpha1.ComponentEtcd)
	stampRevision(&stsMeta, p.revision(v1alpha1.ComponentEtcd))
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: stsMeta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(DesiredReplicas(nc, v1alpha1.ComponentEtcd, replicas, p.Asleep, p.Restoring)),
			Selector:    &metav1.LabelSelector{MatchLabels: selector},
			ServiceName: provisioner.EtcdHeadlessServiceName,
			// All members must start together to form a quorum; ordered
			// start would wait for etcd-0 to be ready, which it cannot be
			// alone.
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Template:             tpl,
			VolumeClaimTemplates: claims,
		},
	}
	client := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(nc, p, provisioner.EtcdName, v1alpha1.ComponentEtcd),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector,
			Ports:    []corev1.ServicePort{servicePort("client", profiles.EtcdClientPort, profiles.EtcdClientPort)},
			// A single member is the only backend there can be: routing to
			// it before its readiness probe passes lets kube-apiserver,
			// which starts alongside it, connect the moment etcd listens
			// rather than a probe later. Several members keep ready-only
			// routing, so a member still catching up gets no clients.
			PublishNotReadyAddresses: replicas == 1,
		},
	}
	headless := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(nc, p, provisioner.EtcdHeadlessServiceName, v1alpha1.ComponentEtcd),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  selector,
			// Members must resolve each other before any is ready.
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{
				servicePort("client", profiles.EtcdClientPort, profiles.EtcdClientPort),
				servicePort("peer", profiles.EtcdPeerPort, profiles.EtcdPeerPort),
			},
		},
	}
	pdb := podDisruptionBudget(nc, p, provisioner.EtcdName, v1alpha1.ComponentEtcd, replicas)
	return appendObjects(nil, pdb, headless, client, sts), nil
}

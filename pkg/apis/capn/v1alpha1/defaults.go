package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/versions"
)

// Defaults that are part of the API contract; changing one changes what
// existing manifests mean, so they live here and nowhere else.
const (
	DefaultServiceCIDR = "10.96.0.0/12"
	DefaultPodCIDR     = "10.244.0.0/16"
	DefaultDNSDomain   = "cluster.local"
	DefaultAPIPort     = int32(6443)
	DefaultEtcdPrefix  = "/registry"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_NestedClusterSpec fills what a minimal manifest leaves out.
func SetDefaults_NestedClusterSpec(obj *NestedClusterSpec) {
	if obj.Version == "" {
		obj.Version = versions.Default()
	}
	n := &obj.ClusterNetwork
	if n.ServiceCIDR == "" {
		n.ServiceCIDR = DefaultServiceCIDR
	}
	if n.PodCIDR == "" {
		n.PodCIDR = DefaultPodCIDR
	}
	if n.DNSDomain == "" {
		n.DNSDomain = DefaultDNSDomain
	}
	// Managed etcd is the default only when the user chose nothing; when
	// two are set validation reports it instead of silently picking one.
	if obj.Etcd.Managed == nil && obj.Etcd.External == nil && obj.Etcd.Pool == "" {
		obj.Etcd.Managed = &ManagedEtcd{}
	}
	if m := obj.Etcd.Managed; m != nil {
		if m.Replicas == nil {
			m.Replicas = ptr.To[int32](1)
		}
		if m.Storage.Type == "" {
			m.Storage.Type = EtcdStorageEmptyDir
		}
	}
	if e := obj.Etcd.External; e != nil && e.Prefix == "" {
		e.Prefix = DefaultEtcdPrefix
	}
	// dataPlane.mode is not defaulted here: decoding defaults stored objects
	// too, and one stored before the field existed must stay None. The
	// registry sets Shared on create.
	for _, c := range []*ComponentSpec{&obj.APIServer.ComponentSpec, &obj.ControllerManager, &obj.Scheduler, &obj.Syncer} {
		if c.Replicas == nil {
			c.Replicas = ptr.To[int32](1)
		}
	}
	if obj.APIServer.Service.Type == "" {
		obj.APIServer.Service.Type = corev1.ServiceTypeClusterIP
	}
	if obj.APIServer.Service.Port == 0 {
		obj.APIServer.Service.Port = DefaultAPIPort
	}
}

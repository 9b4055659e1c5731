// Package fuzzer holds the randfill functions the round-trip tests use to
// build random capn objects.
//
// The round trip decodes through the v1alpha1 codec, which applies
// defaulting, so a fuzzed internal object must already look defaulted or the
// decoded copy would differ from it for reasons that have nothing to do with
// conversion or serialization. Every function here exists for that reason
// alone: each mirrors one defaulter and only fills values that are empty.
// Nothing is cleared, so every field still takes random values through the
// round trip.
package fuzzer

import (
	corev1 "k8s.io/api/core/v1"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/versions"
)

// Funcs returns the fuzzer functions for the capn.dev API group.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return append([]interface{}{
		// Mirrors v1alpha1.SetDefaults_NestedClusterSpec.
		func(s *capn.NestedClusterSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Version == "" {
				s.Version = versions.Default()
			}
			n := &s.ClusterNetwork
			n.ServiceCIDR = orDefault(n.ServiceCIDR, v1alpha1.DefaultServiceCIDR)
			n.PodCIDR = orDefault(n.PodCIDR, v1alpha1.DefaultPodCIDR)
			n.DNSDomain = orDefault(n.DNSDomain, v1alpha1.DefaultDNSDomain)
			if s.Etcd.Managed == nil && s.Etcd.External == nil && s.Etcd.Pool == "" {
				s.Etcd.Managed = &capn.ManagedEtcd{}
			}
			if m := s.Etcd.Managed; m != nil {
				if m.Replicas == nil {
					m.Replicas = ptr.To[int32](1)
				}
				if m.Storage.Type == "" {
					m.Storage.Type = capn.EtcdStorageEmptyDir
				}
			}
			if e := s.Etcd.External; e != nil {
				e.Prefix = orDefault(e.Prefix, v1alpha1.DefaultEtcdPrefix)
			}
			for _, cs := range []*capn.ComponentSpec{&s.APIServer.ComponentSpec, &s.ControllerManager, &s.Scheduler, &s.Syncer} {
				if cs.Replicas == nil {
					cs.Replicas = ptr.To[int32](1)
				}
			}
			if s.APIServer.Service.Type == "" {
				s.APIServer.Service.Type = corev1.ServiceTypeClusterIP
			}
			if s.APIServer.Service.Port == 0 {
				s.APIServer.Service.Port = v1alpha1.DefaultAPIPort
			}
		},
	}, coreDefaultFuncs()...)
}

// coreDefaultFuncs mirror the "+default" markers of k8s.io/api/core/v1 that
// the generated v1alpha1 defaulter applies inside env, pod templates and
// their containers (see v1alpha1/zz_generated.defaults.go). When a k8s.io/api
// bump adds a marker on a type the spec embeds, the round trip fails on that
// field, and a function belongs here.
func coreDefaultFuncs() []interface{} {
	return []interface{}{
		func(p *corev1.ContainerPort, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		},
		func(s *corev1.FileKeySelector, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Optional == nil {
				s.Optional = ptr.To(false)
			}
		},
		func(g *corev1.GRPCAction, c randfill.Continue) {
			c.FillNoCustom(g)
			if g.Service == nil {
				g.Service = ptr.To("")
			}
		},
		func(v *corev1.ISCSIVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			v.ISCSIInterface = orDefault(v.ISCSIInterface, "default")
		},
		func(v *corev1.RBDVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			v.RBDPool = orDefault(v.RBDPool, "rbd")
			v.RadosUser = orDefault(v.RadosUser, "admin")
			v.Keyring = orDefault(v.Keyring, "/etc/ceph/keyring")
		},
		func(v *corev1.ScaleIOVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			v.StorageMode = orDefault(v.StorageMode, "ThinProvisioned")
			v.FSType = orDefault(v.FSType, "xfs")
		},
		func(v *corev1.AzureDiskVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.CachingMode == nil {
				v.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
			}
			if v.FSType == nil {
				v.FSType = ptr.To("ext4")
			}
			if v.ReadOnly == nil {
				v.ReadOnly = ptr.To(false)
			}
			if v.Kind == nil {
				v.Kind = ptr.To(corev1.AzureSharedBlobDisk)
			}
		},
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
)

type invalidCase struct {
	name   string
	mutate func(nc *capn.NestedCluster)
	want   wantErr
}

func runInvalid(t *testing.T, cases []invalidCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := validNC(t)
			tc.mutate(nc)
			errs := ValidateNestedCluster(nc)
			expectError(t, errs, tc.want)
			if testing.Verbose() && len(errs) > 1 {
				t.Logf("extra errors:\n%s", dump(errs))
			}
		})
	}
}

func external(nc *capn.NestedCluster) *capn.ExternalEtcd {
	nc.Spec.Etcd.Managed = nil
	nc.Spec.Etcd.External = &capn.ExternalEtcd{
		Endpoints:       []string{"https://etcd-0.example.com:2379", "https://etcd-1.example.com:2379"},
		CASecretRef:     capn.SecretReference{Name: "etcd-ca"},
		ClientSecretRef: capn.SecretReference{Name: "etcd-client"},
		Prefix:          "/registry",
	}
	return nc.Spec.Etcd.External
}

func storage(nc *capn.NestedCluster) *capn.EtcdStorage { return &nc.Spec.Etcd.Managed.Storage }

var (
	specNet  = "spec.clusterNetwork"
	specEtcd = "spec.etcd"
	extEtcd  = "spec.etcd.external"
	stor     = "spec.etcd.managed.storage"
)

func TestValidateNestedClusterInvalidSpec(t *testing.T) {
	runInvalid(t, []invalidCase{
		// metadata
		{"name too long", func(nc *capn.NestedCluster) { nc.Name = strings.Repeat("a", MaxNameLength+1) },
			wantErr{"metadata.name", field.ErrorTypeInvalid, "no more than 40"}},
		{"name not DNS-1035", func(nc *capn.NestedCluster) { nc.Name = "1tenant" },
			wantErr{"metadata.name", field.ErrorTypeInvalid, ""}},
		{"generateName leaves no room for the suffix", func(nc *capn.NestedCluster) {
			nc.Name, nc.GenerateName = "", strings.Repeat("a", MaxNameLength-2)
		}, wantErr{"metadata.generateName", field.ErrorTypeInvalid, "no more than 35"}},
		{"namespace missing", func(nc *capn.NestedCluster) { nc.Namespace = "" },
			wantErr{"metadata.namespace", field.ErrorTypeRequired, ""}},

		// version
		{"version empty", func(nc *capn.NestedCluster) { nc.Spec.Version = "" },
			wantErr{"spec.version", field.ErrorTypeRequired, ""}},
		{"version without v", func(nc *capn.NestedCluster) { nc.Spec.Version = "1.37.2" },
			wantErr{"spec.version", field.ErrorTypeInvalid, "vMAJOR.MINOR.PATCH"}},
		{"version pre-release", func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.37.0-rc.1" },
			wantErr{"spec.version", field.ErrorTypeInvalid, ""}},
		{"version unsupported minor", func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.30.0" },
			wantErr{"spec.version", field.ErrorTypeNotSupported, `"v1.37"`}},

		// clusterNetwork
		{"serviceCIDR empty", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.ServiceCIDR = "" },
			wantErr{specNet + ".serviceCIDR", field.ErrorTypeRequired, ""}},
		{"serviceCIDR garbage", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.ServiceCIDR = "10.96.0.0/33" },
			wantErr{specNet + ".serviceCIDR", field.ErrorTypeInvalid, ""}},
		{"serviceCIDR host bits set", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.ServiceCIDR = "10.96.0.1/12" },
			wantErr{specNet + ".serviceCIDR", field.ErrorTypeInvalid, ""}},
		{"serviceCIDR larger than /12", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.ServiceCIDR = "10.0.0.0/8" },
			wantErr{specNet + ".serviceCIDR", field.ErrorTypeInvalid, "/12 or smaller"}},
		{"serviceCIDR IPv6", func(nc *capn.NestedCluster) {
			nc.Spec.ClusterNetwork = capn.ClusterNetwork{ServiceCIDR: "fd00::/8", PodCIDR: "10.244.0.0/16", DNSDomain: "cluster.local"}
		}, wantErr{specNet + ".serviceCIDR", field.ErrorTypeInvalid, "must be an IPv4 range"}},
		{"podCIDR of another family", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.PodCIDR = "fd00:10:244::/56" },
			wantErr{specNet + ".podCIDR", field.ErrorTypeInvalid, "must be of serviceCIDR's IP family"}},
		{"podCIDR invalid", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.PodCIDR = "pods" },
			wantErr{specNet + ".podCIDR", field.ErrorTypeInvalid, ""}},
		{"podCIDR inside serviceCIDR", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.PodCIDR = "10.100.0.0/16" },
			wantErr{specNet + ".podCIDR", field.ErrorTypeInvalid, "must not overlap serviceCIDR 10.96.0.0/12"}},
		{"podCIDR containing serviceCIDR", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.PodCIDR = "10.0.0.0/8" },
			wantErr{specNet + ".podCIDR", field.ErrorTypeInvalid, "serviceCIDR"}},
		{"dnsDomain empty", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.DNSDomain = "" },
			wantErr{specNet + ".dnsDomain", field.ErrorTypeRequired, ""}},
		{"dnsDomain not a subdomain", func(nc *capn.NestedCluster) { nc.Spec.ClusterNetwork.DNSDomain = "Cluster_Local" },
			wantErr{specNet + ".dnsDomain", field.ErrorTypeInvalid, ""}},

		// etcd choice
		{"etcd neither", func(nc *capn.NestedCluster) { nc.Spec.Etcd = capn.EtcdSpec{} },
			wantErr{specEtcd, field.ErrorTypeRequired, ""}},
		{"etcd both", func(nc *capn.NestedCluster) {
			m := nc.Spec.Etcd.Managed
			external(nc)
			nc.Spec.Etcd.Managed = m
		}, wantErr{extEtcd, field.ErrorTypeForbidden, "only one of managed, external or pool"}},
		{"etcd managed and pool", func(nc *capn.NestedCluster) { nc.Spec.Etcd.Pool = "shared" },
			wantErr{specEtcd + ".pool", field.ErrorTypeForbidden, "only one of managed, external or pool"}},
		{"etcd pool not a name", func(nc *capn.NestedCluster) { nc.Spec.Etcd = capn.EtcdSpec{Pool: "Shared_Pool"} },
			wantErr{specEtcd + ".pool", field.ErrorTypeInvalid, "lowercase"}},

		// managed etcd
		{"etcd replicas missing", func(nc *capn.NestedCluster) { nc.Spec.Etcd.Managed.Replicas = nil },
			wantErr{"spec.etcd.managed.replicas", field.ErrorTypeRequired, ""}},
		{"etcd replicas 2", func(nc *capn.NestedCluster) { nc.Spec.Etcd.Managed.Replicas = ptr.To[int32](2) },
			wantErr{"spec.etcd.managed.replicas", field.ErrorTypeNotSupported, `"1", "3"`}},
		{"etcd image invalid", func(nc *capn.NestedCluster) { nc.Spec.Etcd.Managed.Image = "Registry/Etcd" },
			wantErr{"spec.etcd.managed.image", field.ErrorTypeInvalid, ""}},
		{"etcd resources negative", func(nc *capn.NestedCluster) {
			nc.Spec.Etcd.Managed.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": resource.MustParse("-1Gi")}}
		}, wantErr{"spec.etcd.managed.resources.requests[memory]", field.ErrorTypeInvalid, ""}},
		{"storage type empty", func(nc *capn.NestedCluster) { storage(nc).Type = "" },
			wantErr{stor + ".type", field.ErrorTypeRequired, ""}},
		{"storage type unknown", func(nc *capn.NestedCluster) { storage(nc).Type = "Disk" },
			wantErr{stor + ".type", field.ErrorTypeNotSupported, "PersistentVolumeClaim"}},
		{"PVC without size", func(nc *capn.NestedCluster) { storage(nc).Type = capn.EtcdStoragePersistentVolumeClaim },
			wantErr{stor + ".size", field.ErrorTypeRequired, ""}},
		{"size zero", func(nc *capn.NestedCluster) { storage(nc).Size = ptr.To(resource.MustParse("0")) },
			wantErr{stor + ".size", field.ErrorTypeInvalid, "greater than zero"}},
		{"storageClassName without PVC", func(nc *capn.NestedCluster) { storage(nc).StorageClassName = ptr.To("fast") },
			wantErr{stor + ".storageClassName", field.ErrorTypeForbidden, ""}},
		{"storageClassName invalid", func(nc *capn.NestedCluster) {
			s := storage(nc)
			s.Type, s.Size, s.StorageClassName = capn.EtcdStoragePersistentVolumeClaim, ptr.To(resource.MustParse("8Gi")), ptr.To("Fast_SSD")
		}, wantErr{stor + ".storageClassName", field.ErrorTypeInvalid, ""}},

		// external etcd
		{"external no endpoints", func(nc *capn.NestedCluster) { external(nc).Endpoints = nil },
			wantErr{extEtcd + ".endpoints", field.ErrorTypeRequired, ""}},
		{"external endpoint bad scheme", func(nc *capn.NestedCluster) { external(nc).Endpoints[0] = "unix://etcd.sock:1" },
			wantErr{extEtcd + ".endpoints[0]", field.ErrorTypeInvalid, "https or http"}},
		{"external endpoint no port", func(nc *capn.NestedCluster) { external(nc).Endpoints[0] = "https://etcd-0" },
			wantErr{extEtcd + ".endpoints[0]", field.ErrorTypeInvalid, "port"}},
		{"external endpoint port out of range", func(nc *capn.NestedCluster) { external(nc).Endpoints[1] = "https://etcd:70000" },
			wantErr{extEtcd + ".endpoints[1]", field.ErrorTypeInvalid, "between 1 and 65535"}},
		{"external endpoint no host", func(nc *capn.NestedCluster) { external(nc).Endpoints[0] = "https://:2379" },
			wantErr{extEtcd + ".endpoints[0]", field.ErrorTypeInvalid, "host"}},
		{"external endpoint with path", func(nc *capn.NestedCluster) { external(nc).Endpoints[0] = "https://etcd:2379/v3" },
			wantErr{extEtcd + ".endpoints[0]", field.ErrorTypeInvalid, "path"}},
		{"external endpoint with credentials", func(nc *capn.NestedCluster) { external(nc).Endpoints[0] = "https://root:pw@etcd:2379" },
			wantErr{extEtcd + ".endpoints[0]", field.ErrorTypeInvalid, "credentials"}},
		{"external endpoint duplicate", func(nc *capn.NestedCluster) {
			x := external(nc)
			x.Endpoints[1] = x.Endpoints[0]
		}, wantErr{extEtcd + ".endpoints[1]", field.ErrorTypeDuplicate, ""}},
		{"external caSecretRef empty", func(nc *capn.NestedCluster) { external(nc).CASecretRef.Name = "" },
			wantErr{extEtcd + ".caSecretRef.name", field.ErrorTypeRequired, ""}},
		{"external clientSecretRef invalid", func(nc *capn.NestedCluster) { external(nc).ClientSecretRef.Name = "Etcd_Client" },
			wantErr{extEtcd + ".clientSecretRef.name", field.ErrorTypeInvalid, ""}},
		{"external prefix empty", func(nc *capn.NestedCluster) { external(nc).Prefix = "" },
			wantErr{extEtcd + ".prefix", field.ErrorTypeRequired, ""}},
		{"external prefix relative", func(nc *capn.NestedCluster) { external(nc).Prefix = "registry" },
			wantErr{extEtcd + ".prefix", field.ErrorTypeInvalid, "'/'"}},

		// apiServer service and SANs
		{"service type ExternalName", func(nc *capn.NestedCluster) { nc.Spec.APIServer.Service.Type = corev1.ServiceTypeExternalName },
			wantErr{"spec.apiServer.service.type", field.ErrorTypeNotSupported, "LoadBalancer"}},
		{"service type empty", func(nc *capn.NestedCluster) { nc.Spec.APIServer.Service.Type = "" },
			wantErr{"spec.apiServer.service.type", field.ErrorTypeRequired, ""}},
		{"service port 0", func(nc *capn.NestedCluster) { nc.Spec.APIServer.Service.Port = 0 },
			wantErr{"spec.apiServer.service.port", field.ErrorTypeInvalid, ""}},
		{"service port too high", func(nc *capn.NestedCluster) { nc.Spec.APIServer.Service.Port = 65536 },
			wantErr{"spec.apiServer.service.port", field.ErrorTypeInvalid, ""}},
		{"certSAN invalid", func(nc *capn.NestedCluster) { nc.Spec.APIServer.CertSANs = []string{"api.example.com", "bad_name"} },
			wantErr{"spec.apiServer.certSANs[1]", field.ErrorTypeInvalid, ""}},
		{"certSAN IPv6 not canonical", func(nc *capn.NestedCluster) { nc.Spec.APIServer.CertSANs = []string{"2001:0db8::1"} },
			wantErr{"spec.apiServer.certSANs[0]", field.ErrorTypeInvalid, "canonical"}},
		{"certSAN duplicate", func(nc *capn.NestedCluster) { nc.Spec.APIServer.CertSANs = []string{"10.0.0.1", "10.0.0.1"} },
			wantErr{"spec.apiServer.certSANs[1]", field.ErrorTypeDuplicate, ""}},
		{"certSAN empty", func(nc *capn.NestedCluster) { nc.Spec.APIServer.CertSANs = []string{""} },
			wantErr{"spec.apiServer.certSANs[0]", field.ErrorTypeRequired, ""}},
	})
}

func TestValidateNestedClusterValid(t *testing.T) {
	cases := map[string]func(nc *capn.NestedCluster){
		"defaulted minimal":             func(*capn.NestedCluster) {},
		"name of exactly MaxNameLength": func(nc *capn.NestedCluster) { nc.Name = "a" + strings.Repeat("b", MaxNameLength-1) },
		"older supported minor":         func(nc *capn.NestedCluster) { nc.Spec.Version = "v1.36.0" },
		"three etcd members on a PVC": func(nc *capn.NestedCluster) {
			m := nc.Spec.Etcd.Managed
			m.Replicas = ptr.To[int32](3)
			m.Image = "registry.k8s.io/etcd:3.6.4-0"
			m.Storage = capn.EtcdStorage{Type: capn.EtcdStoragePersistentVolumeClaim, Size: ptr.To(resource.MustParse("8Gi")), StorageClassName: ptr.To("fast-ssd")}
		},
		"memory etcd with a size limit": func(nc *capn.NestedCluster) {
			*storage(nc) = capn.EtcdStorage{Type: capn.EtcdStorageMemory, Size: ptr.To(resource.MustParse("512Mi"))}
		},
		"external etcd": func(nc *capn.NestedCluster) {
			external(nc).Endpoints = []string{"https://etcd-0.example.com:2379", "http://10.0.0.5:2379", "https://[2001:db8::5]:2379"}
		},
		"pooled etcd": func(nc *capn.NestedCluster) { nc.Spec.Etcd = capn.EtcdSpec{Pool: "shared-1"} },
		"exposed apiserver with SANs": func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.Service = capn.APIServerService{Type: corev1.ServiceTypeLoadBalancer, Port: 443}
			nc.Spec.APIServer.CertSANs = []string{"api.example.com", "*.tenants.example.com", "192.0.2.10", "2001:db8::10"}
		},
		"max replicas": func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.Replicas = ptr.To[int32](maxComponentReplicas)
			nc.Spec.Scheduler.Replicas = ptr.To[int32](2)
		},
		"customised components": func(nc *capn.NestedCluster) {
			a := &nc.Spec.APIServer.ComponentSpec
			a.Image = "example.com/custom/kube-apiserver:v1.37.2-patched@sha256:" + strings.Repeat("ab", 32)
			a.Command = []string{"/usr/local/bin/kube-apiserver"}
			a.ExtraArgs = map[string]string{"v": "4", "feature-gates": "Foo=true,Bar=false", "audit-log-maxage": "7"}
			a.Env = []corev1.EnvVar{
				{Name: "GOMAXPROCS", Value: "2"},
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
			}
			a.Resources = &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": resource.MustParse("250m"), "memory": resource.MustParse("512Mi")},
				Limits:   corev1.ResourceList{"memory": resource.MustParse("1Gi")},
			}
			nc.Spec.ControllerManager.ExtraArgs = map[string]string{"use-service-account-credentials": "true", "controllers": "*,-bootstrapsigner"}
			nc.Spec.Scheduler.ExtraArgs = map[string]string{"service-account-unrelated": "x"}
		},
		"safe pod template": func(nc *capn.NestedCluster) {
			nc.Spec.APIServer.PodTemplate = &corev1.PodTemplateSpec{}
			tpl := nc.Spec.APIServer.PodTemplate
			tpl.Labels = map[string]string{"team": "a"}
			tpl.Annotations = map[string]string{"example.com/owner": "team-a"}
			tpl.Spec = corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](60),
				SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532)},
				Volumes: []corev1.Volume{
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "info", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{}}}}}},
				},
				Containers: []corev1.Container{{
					Name: "kube-apiserver",
					SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					},
					Ports:     []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}},
					Env:       []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				}, {
					// A sidecar, e.g. a KMS plugin.
					Name: "kms", Image: "example.com/kms-plugin:v1", Args: []string{"--listen=/run/kms/socket"},
					VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/run/kms"}},
				}},
			}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			nc := validNC(t)
			mutate(nc)
			expectNoErrors(t, ValidateNestedCluster(nc))
		})
	}
}

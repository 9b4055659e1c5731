package builders

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

// APIServer builds the tenant kube-apiserver: its authentication-config
// ConfigMap, a Deployment whose pods carry v1alpha1.ComponentSelector
// (so /scale and HPA find them), the Service that exposes it per
// spec.apiServer.service and, with more than one replica, a PDB.
func APIServer(nc *v1alpha1.NestedCluster, p Params) ([]Object, error) {
	const component = v1alpha1.ComponentAPIServer
	spec := &nc.Spec.APIServer
	replicas, err := replicasOf(spec.Replicas, "spec.apiServer.replicas")
	if err != nil {
		return nil, err
	}
	replicas = DesiredReplicas(nc, component, replicas, p.Asleep, p.Restoring)
	version := p.Versions.For(nc, component)
	prof, err := profileFor(component, version)
	if err != nil {
		return nil, err
	}

	cn := nc.Spec.ClusterNetwork
	in := profiles.Params{ServiceCIDR: cn.ServiceCIDR, PodCIDR: cn.PodCIDR, DNSDomain: cn.DNSDomain,
		SharedDataPlane:   nc.Spec.DataPlane.Mode == v1alpha1.DataPlaneShared,
		NodeJoin:          p.revision(component) >= JoinTemplateRevision,
		WebhookClientCert: shared(nc) && p.revision(component) >= WebhookClientCertTemplateRevision}
	switch x := nc.Spec.Etcd.External; {
	case x != nil:
		in.EtcdServers, in.EtcdPrefix = x.Endpoints, x.Prefix
	case nc.Spec.Etcd.Pool != "":
		if p.EtcdPool == nil {
			return nil, fmt.Errorf("spec.etcd.pool %q: the pool's endpoints are not known", nc.Spec.Etcd.Pool)
		}
		in.EtcdServers, in.EtcdPrefix = p.EtcdPool.Endpoints, p.EtcdPool.Prefix
		// Compaction is the whole pool's, and etcd allows it to root only.
		in.EtcdCompactionDisabled = true
	default:
		in.EtcdServers, in.EtcdPrefix = []string{provisioner.EtcdClientURL(nc, p.Addresses(), profiles.EtcdClientPort)}, v1alpha1.DefaultEtcdPrefix
	}
	flags, err := args(prof, component, in, spec.ExtraArgs)
	if err != nil {
		return nil, err
	}

	config := map[string]string{profiles.FileAuthenticationConfig: prof.AuthenticationConfig(in)}
	if in.WebhookClientCert {
		config[profiles.FileAdmissionConfig] = prof.AdmissionConfig()
		config[profiles.FileWebhookKubeconfig] = prof.WebhookKubeconfig()
	}
	pki := pkiVolume(component, p.revision(component), apiserverFiles(nc))
	c := corev1.Container{
		Name:    component,
		Image:   ImageRegistry + "/" + component + ":" + version,
		Command: []string{component},
		Args:    flags,
		Ports:   []corev1.ContainerPort{tcpPort("https", profiles.APIServerPort)},
		// Anonymous access to these paths is what authentication-config
		// allows; startup covers a cold etcd and the post-start hooks.
		StartupProbe:   startupProbe(httpsProbe("/livez", profiles.APIServerPort, 10, 24), p.revision(component), 240),
		LivenessProbe:  httpsProbe("/livez", profiles.APIServerPort, 10, 8),
		ReadinessProbe: httpsProbe("/readyz", profiles.APIServerPort, 5, 3),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "pki", MountPath: profiles.PKIDir, ReadOnly: true},
			{Name: "config", MountPath: profiles.ConfigDir, ReadOnly: true},
		},
	}
	tpl := podTemplate(nc, component, podAnnotations(version, p, config),
		podSpec(nc, p, component, c, []corev1.Volume{pki, configMapVolume("config", provisioner.APIServerConfigName)}))
	if err := customize(&tpl, component, &spec.ComponentSpec); err != nil {
		return nil, err
	}

	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(nc, p, provisioner.APIServerName, component),
		Spec: corev1.ServiceSpec{
			Type:     spec.Service.Type,
			Selector: provisioner.SelectorLabels(nc, component),
			Ports:    []corev1.ServicePort{servicePort(apiServerPortName, spec.Service.Port, profiles.APIServerPort)},
		},
	}
	return appendObjects(nil, podDisruptionBudget(nc, p, provisioner.APIServerName, component, replicas),
		configMap(nc, p, provisioner.APIServerConfigName, component, config),
		deployment(nc, p, provisioner.APIServerName, component, replicas, tpl, false),
		svc), nil
}

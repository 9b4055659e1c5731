package builders

import (
	corev1 "k8s.io/api/core/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

// ControllerManager builds kube-controller-manager: a Deployment (and a PDB
// with more than one replica) reading its kubeconfig, serving certificate,
// the cluster CA key (it signs CSRs) and the service-account key.
func ControllerManager(nc *v1alpha1.NestedCluster, p Params) ([]Object, error) {
	return controller(nc, p, controllerSpec{
		component: v1alpha1.ComponentControllerManager,
		name:      provisioner.ControllerManagerName,
		field:     "spec.controllerManager.replicas",
		spec:      &nc.Spec.ControllerManager,
		port:      profiles.ControllerManagerPort,
		files:     controllerManagerFiles,
	})
}

// Scheduler builds kube-scheduler: its KubeSchedulerConfiguration
// ConfigMap, a Deployment (and a PDB with more than one replica).
func Scheduler(nc *v1alpha1.NestedCluster, p Params) ([]Object, error) {
	return controller(nc, p, controllerSpec{
		component: v1alpha1.ComponentScheduler,
		name:      provisioner.SchedulerName,
		field:     "spec.scheduler.replicas",
		spec:      &nc.Spec.Scheduler,
		port:      profiles.SchedulerPort,
		files:     schedulerFiles,

		configMap: provisioner.SchedulerConfigName,
		config: func(prof profiles.Profile) map[string]string {
			return map[string]string{profiles.FileSchedulerConfig: prof.SchedulerConfig()}
		},
	})
}

type controllerSpec struct {
	component, name, field string
	spec                   *v1alpha1.ComponentSpec
	port                   int
	files                  []file
	configMap              string                                   // optional generated config ...
	config                 func(profiles.Profile) map[string]string // ... and its files
}

// controller builds a leader-elected kube-* controller. Leader election is
// on at every replica count (the flag is owned): scaling 1→N then changes
// no flag and restarts nothing, and the tenant can see who leads in its
// kube-system Leases. A single replica is still replaced with Recreate, so
// an upgrade never waits a lease duration for the old leader to let go.
func controller(nc *v1alpha1.NestedCluster, p Params, s controllerSpec) ([]Object, error) {
	replicas, err := replicasOf(s.spec.Replicas, s.field)
	if err != nil {
		return nil, err
	}
	replicas = DesiredReplicas(nc, s.component, replicas, p.Asleep, p.Restoring)
	version := p.Versions.For(nc, s.component)
	prof, err := profileFor(s.component, version)
	if err != nil {
		return nil, err
	}
	cn := nc.Spec.ClusterNetwork
	in := profiles.Params{ServiceCIDR: cn.ServiceCIDR, PodCIDR: cn.PodCIDR, DNSDomain: cn.DNSDomain, LeaderElect: true}
	flags, err := args(prof, s.component, in, s.spec.ExtraArgs)
	if err != nil {
		return nil, err
	}
	c := corev1.Container{
		Name:    s.component,
		Image:   ImageRegistry + "/" + s.component + ":" + version,
		Command: []string{s.component},
		Args:    flags,
		Ports:   []corev1.ContainerPort{tcpPort("https", s.port)},
		// /healthz is in the components' default always-allowed paths.
		StartupProbe:  startupProbe(httpsProbe("/healthz", s.port, 10, 24), p.revision(s.component), 240),
		LivenessProbe: httpsProbe("/healthz", s.port, 10, 8),
		VolumeMounts:  []corev1.VolumeMount{{Name: "pki", MountPath: profiles.PKIDir, ReadOnly: true}},
	}
	volumes := []corev1.Volume{pkiVolume(s.component, p.revision(s.component), s.files)}
	var objs []Object
	var config map[string]string
	if s.configMap != "" {
		config = s.config(prof)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: profiles.ConfigDir, ReadOnly: true})
		volumes = append(volumes, configMapVolume("config", s.configMap))
		objs = append(objs, configMap(nc, p, s.configMap, s.component, config))
	}
	tpl := podTemplate(nc, s.component, podAnnotations(version, p, config), podSpec(nc, p, s.component, c, volumes))
	if err := customize(&tpl, s.component, s.spec); err != nil {
		return nil, err
	}
	objs = append(objs, deployment(nc, p, s.name, s.component, replicas, tpl, true))
	return appendObjects(objs, podDisruptionBudget(nc, p, s.name, s.component, replicas)), nil
}

package addons

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	apiregv1ac "k8s.io/kube-aggregator/pkg/client/applyconfiguration/apiregistration/v1"

	"capn.dev/capn/pkg/tenant/names"
)

// metricsCPURequest is the addon's CPU request: it scrapes one kubelet
// endpoint every 15 s, a few millicores, and every tenant pays this on the
// node (as dnsCPURequest).
const metricsCPURequest = "5m"

// metrics-server's own port, as upstream's manifest has it; the tenant
// apiserver reaches it through the Service's 443.
const (
	metricsServerPort = 10250
	// metricsServerUID is upstream's image user.
	metricsServerUID = 65534
)

// MetricsConfig is what the metrics addon is built from.
type MetricsConfig struct {
	// Image is metrics-server's image.
	Image string
	// KubeletPort is where the syncer serves the virtual Nodes' resource
	// metrics: metrics-server scrapes each Node's InternalIP (the
	// syncer's) at this port, and the path the Node's annotation names.
	KubeletPort int32
}

// Validate refuses a configuration that would render a broken addon.
func (c MetricsConfig) Validate() error {
	if c.Image == "" {
		return fmt.Errorf("the metrics addon needs an image")
	}
	if c.KubeletPort < 1 || c.KubeletPort > 65535 {
		return fmt.Errorf("kubelet metrics port %d is not a port", c.KubeletPort)
	}
	return nil
}

// MetricsObjects are the addon's objects, in the order they are applied:
// the APIService last, once something can answer it.
type MetricsObjects struct {
	ServiceAccount *corev1ac.ServiceAccountApplyConfiguration
	Service        *corev1ac.ServiceApplyConfiguration
	Deployment     *appsv1ac.DeploymentApplyConfiguration
	APIService     *apiregv1ac.APIServiceApplyConfiguration
}

// MetricsLabels are on every metrics addon object and its pods.
func MetricsLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/managed-by": names.ManagedByValue,
		"app.kubernetes.io/name":       names.MetricsServerName,
		names.MetricsAppLabel:          names.MetricsAppValue,
	}
}

// MetricsServer builds the addon: upstream's manifest (sigs.k8s.io/
// metrics-server manifests/base) with capn's differences, each for a
// reason:
//   - --kubelet-port is the syncer's metrics port, and the scrape path is
//     each virtual Node's metrics.k8s.io/resource-metrics-path annotation:
//     every virtual Node's InternalIP is the syncer's, so the path tells
//     the nodes apart;
//   - --kubelet-insecure-tls: the syncer's serving certificate comes from
//     a CA that lives in its memory only (it holds no tenant CA key), as
//     kubeadm's self-signed kubelet certificates, for which upstream
//     documents the same flag. What metrics-server sends there is its
//     ServiceAccount token, which the syncer reviews with the tenant and
//     which grants reads only;
//   - a virtual Node, as for CoreDNS: only there does its traffic reach
//     the syncer's metrics port;
//   - smaller requests, and a CPU limit: a tenant is small, and the
//     addon's cost, in its quota too, is its.
func MetricsServer(c MetricsConfig) MetricsObjects {
	labels := MetricsLabels()
	selector := map[string]string{names.MetricsAppLabel: names.MetricsAppValue}
	ns, name := names.MetricsNamespace, names.MetricsServerName
	sa := corev1ac.ServiceAccount(name, ns).WithLabels(labels)
	svc := corev1ac.Service(name, ns).WithLabels(labels).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().WithName("https").WithProtocol(corev1.ProtocolTCP).WithPort(443).WithTargetPort(intstr.FromString("https"))))

	container := corev1ac.Container().
		WithName(name).
		WithImage(c.Image).
		WithArgs(
			"--cert-dir=/tmp",
			"--secure-port="+strconv.Itoa(metricsServerPort),
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-port="+strconv.Itoa(int(c.KubeletPort)),
			"--kubelet-insecure-tls",
			"--metric-resolution=15s",
		).
		WithPorts(corev1ac.ContainerPort().WithName("https").WithProtocol(corev1.ProtocolTCP).WithContainerPort(metricsServerPort)).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(metricsCPURequest), corev1.ResourceMemory: resource.MustParse("64Mi")}).
			// A CPU limit of its own: without one the workload namespace's
			// LimitRange would give it a whole core of the tenant's
			// limits.cpu quota.
			WithLimits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("200Mi")})).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp")).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/readyz").WithPort(intstr.FromString("https")).WithScheme(corev1.URISchemeHTTPS)).
			WithPeriodSeconds(10).WithFailureThreshold(3)).
		WithLivenessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/livez").WithPort(intstr.FromString("https")).WithScheme(corev1.URISchemeHTTPS)).
			WithInitialDelaySeconds(20).WithPeriodSeconds(10).WithFailureThreshold(3)).
		WithSecurityContext(restricted(metricsServerUID))

	deploy := appsv1ac.Deployment(name, ns).WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(name).
					WithNodeSelector(map[string]string{names.VirtualNodeLabel: "true"}).
					WithContainers(container).
					WithVolumes(corev1ac.Volume().WithName("tmp").
						WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse("16Mi")))))))

	api := apiregv1ac.APIService(names.MetricsAPIServiceName).WithLabels(labels).
		WithSpec(apiregv1ac.APIServiceSpec().
			WithGroup("metrics.k8s.io").WithVersion("v1beta1").
			WithGroupPriorityMinimum(100).WithVersionPriority(100).
			// metrics-server's serving certificate is self-signed at each
			// start (--cert-dir=/tmp), as in upstream's manifest.
			WithInsecureSkipTLSVerify(true).
			WithService(apiregv1ac.ServiceReference().WithNamespace(ns).WithName(name).WithPort(443)))
	return MetricsObjects{ServiceAccount: sa, Service: svc, Deployment: deploy, APIService: api}
}

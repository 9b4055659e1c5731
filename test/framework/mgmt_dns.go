package framework

import (
	"context"
	"net"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/versions"
)

// ManagementDNSNamespace holds the management cluster's DNS server that
// DeployManagementDNS starts.
const ManagementDNSNamespace = "mgmt-dns"

// managementDNS is cluster DNS for the management cluster: CoreDNS (the
// image the tenant DNS addon uses) answering for cluster.local and its
// reverse zones from the management apiserver, and for nothing else. It has
// no forward plugin, so no query ever leaves the machine. It listens on
// 1053 as a non-root user; the Service maps port 53 to it.
const managementDNS = `apiVersion: v1
kind: Namespace
metadata: {name: mgmt-dns}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: mgmt-dns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: mgmt-dns}
rules:
- apiGroups: [""]
  resources: [services, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: mgmt-dns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: mgmt-dns}
subjects:
- {kind: ServiceAccount, name: coredns, namespace: mgmt-dns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: mgmt-dns}
data:
  Corefile: |
    .:1053 {
        errors
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: mgmt-dns}
spec:
  replicas: 1
  selector: {matchLabels: {app: coredns}}
  template:
    metadata: {labels: {app: coredns}}
    spec:
      serviceAccountName: coredns
      terminationGracePeriodSeconds: 1
      securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532}
      containers:
      - name: coredns
        image: IMAGE
        imagePullPolicy: Never
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 1053, protocol: UDP}
        - {name: dns-tcp, containerPort: 1053, protocol: TCP}
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
          periodSeconds: 2
        volumeMounts:
        - {name: config, mountPath: /etc/coredns, readOnly: true}
      volumes:
      - name: config
        configMap: {name: coredns}
---
apiVersion: v1
kind: Service
metadata: {name: coredns, namespace: mgmt-dns}
spec:
  selector: {app: coredns}
  ports:
  - {name: dns, port: 53, targetPort: 1053, protocol: UDP}
  - {name: dns-tcp, port: 53, targetPort: 1053, protocol: TCP}
`

// DeployManagementDNS gives c cluster DNS: the local cluster has none (its
// kubelet has no clusterDNS), so pods that must find one another by name,
// such as etcd members under a headless Service, are pointed at the
// returned address through their dnsConfig.
func DeployManagementDNS(t TB, c *Cluster, k Kubectl) net.IP {
	t.Helper()
	k.MustRun(t, strings.Replace(managementDNS, "IMAGE", versions.CoreDNSImage, 1), "apply", "-f", "-")
	k.MustRun(t, "", "rollout", "status", "deployment/coredns", "-n", ManagementDNSNamespace, "--timeout=120s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := c.Client.CoreV1().Services(ManagementDNSNamespace).Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(svc.Spec.ClusterIP)
	if ip == nil {
		t.Fatalf("the management DNS Service has no ClusterIP: %q", svc.Spec.ClusterIP)
	}
	t.Logf("management cluster DNS at %s (%s)", ip, versions.CoreDNSImage)
	return ip
}

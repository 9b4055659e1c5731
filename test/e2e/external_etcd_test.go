//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/test/framework"
)

// externalEtcd is an etcd the test runs itself, as an etcd operator or a
// managed service would, in its own namespace of the management cluster:
// TLS on, client certificates required.
type externalEtcd struct {
	Endpoint string
	// CASecret and ClientSecret are what a tenant creates in its own
	// namespace and names in spec.etcd.external.
	CASecret, ClientSecret string
}

const externalEtcdNS = "external-etcd"

// startExternalEtcd runs it and puts the client credentials in tenantNS.
func startExternalEtcd(t *testing.T, c *framework.Cluster, tenantNS string) externalEtcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := runTLSEtcd(t, c, externalEtcdNS, "external-etcd")
	client, err := e.CA.ClientCert("tenant-apiserver")
	require.NoError(t, err, "external etcd client certificate")
	core := c.Client.CoreV1()
	x := externalEtcd{Endpoint: e.Endpoint, CASecret: "ext-etcd-ca", ClientSecret: "ext-etcd-client"}
	_, err = core.Secrets(tenantNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: x.CASecret},
		Data: map[string][]byte{"ca.crt": e.CA.CertPEM}}, metav1.CreateOptions{})
	require.NoError(t, err, "tenant CA secret")
	_, err = core.Secrets(tenantNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: x.ClientSecret},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": client.CertPEM, "tls.key": client.KeyPEM}}, metav1.CreateOptions{})
	require.NoError(t, err, "tenant client secret")
	t.Logf("external etcd at %s", x.Endpoint)
	return x
}

// tlsEtcd is one etcd member the test runs as a pod of its own namespace,
// behind a Service named etcd: TLS on, client certificates required.
type tlsEtcd struct {
	NS       string
	Endpoint string // https://<ClusterIP>:2379
	CA       *framework.CA
}

func runTLSEtcd(t testing.TB, c *framework.Cluster, ns, app string) tlsEtcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	core := c.Client.CoreV1()
	must := func(what string, err error) {
		t.Helper()
		require.NoError(t, err, "%s: %s", app, what)
	}
	_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must("namespace", err)
	labels := map[string]string{"app": app}
	svc, err := core.Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}},
	}, metav1.CreateOptions{})
	must("service", err)
	ip := svc.Spec.ClusterIP

	// The serving certificate needs the ClusterIP, so the Service comes first.
	ca, err := framework.NewCA(t.TempDir(), app+"-ca")
	must("CA", err)
	serving, err := ca.Issue("etcd-serving", cert.Config{CommonName: "etcd",
		AltNames: cert.AltNames{DNSNames: []string{"etcd." + ns + ".svc"}, IPs: []net.IP{net.ParseIP(ip)}},
		Usages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	must("serving certificate", err)
	_, err = core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "etcd-tls"},
		Data: map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": serving.CertPEM, "tls.key": serving.KeyPEM}}, metav1.CreateOptions{})
	must("server secret", err)

	uid := int64(65532)
	_, err = core.Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Labels: labels},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid},
			Containers: []corev1.Container{{
				Name: "etcd", Image: builders.DefaultEtcdImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"etcd"},
				Args: []string{"--name=" + app, "--data-dir=/var/lib/etcd",
					"--listen-client-urls=https://0.0.0.0:2379", "--advertise-client-urls=https://" + net.JoinHostPort(ip, "2379"),
					"--cert-file=/tls/tls.crt", "--key-file=/tls/tls.key", "--trusted-ca-file=/tls/ca.crt", "--client-cert-auth=true",
					"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
					"--initial-cluster=" + app + "=http://127.0.0.1:2380", "--listen-metrics-urls=http://0.0.0.0:2381",
					// A pool compacts itself: its tenants' apiservers do not
					// (docs/cost.md).
					"--auto-compaction-mode=periodic", "--auto-compaction-retention=5m"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/health", Port: intstr.FromInt32(2381)}}, PeriodSeconds: 2},
				VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}, {Name: "data", MountPath: "/var/lib/etcd"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "etcd-tls", DefaultMode: ptr.To[int32](0o440)}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}, metav1.CreateOptions{})
	must("pod", err)
	framework.Eventually(t, 2*time.Minute, app+" pod Ready", func() (bool, string) {
		p, err := core.Pods(ns).Get(ctx, "etcd", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("phase %s %v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	return tlsEtcd{NS: ns, Endpoint: "https://" + net.JoinHostPort(ip, "2379"), CA: ca}
}

// externalEtcdPuts reads etcd_mvcc_put_total from the external etcd's
// metrics port (plain HTTP on the pod IP, from the host): a tenant
// apiserver that stores its objects there drives it up.
func externalEtcdPuts(t *testing.T, c *framework.Cluster) float64 {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(externalEtcdNS).Get(context.Background(), "etcd", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("external etcd pod: %v", err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + net.JoinHostPort(p.Status.PodIP, "2381") + "/metrics")
	if err != nil {
		t.Fatalf("external etcd metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := promValue(string(body), "etcd_mvcc_put_total")
	if !ok {
		t.Fatalf("external etcd metrics lack etcd_mvcc_put_total")
	}
	return v
}

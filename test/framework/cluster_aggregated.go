package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// AggregatedServer is an extension API server run as a host process and
// served through the cluster's aggregator, as it would be from a pod.
type AggregatedServer struct {
	*Process
	// Namespace and Service name the selectorless Service the APIService
	// points at; the server's certificate is valid for <Service>.<Namespace>.svc.
	Namespace, Service string
	// URL reaches the server directly, bypassing the aggregator.
	URL string
	// ServingCA signed the serving certificate; it is the APIService's caBundle.
	ServingCA *CA
	// Kubeconfig carries a token of the server's service account.
	Kubeconfig string
	// Ready is the time from exec to the first /readyz 200.
	Ready time.Duration

	c    *Cluster
	port int
}

// StartAggregatedServer is LaunchAggregatedServer, then a wait for its
// /readyz.
func (c *Cluster) StartAggregatedServer(t TB, bin, namespace, serviceAccount, service string, extraArgs ...string) *AggregatedServer {
	t.Helper()
	s := c.LaunchAggregatedServer(t, bin, namespace, serviceAccount, service, extraArgs...)
	var err error
	if s.Ready, err = s.WaitHealthy(s.HTTPClient(nil), s.URL+"/readyz", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	return s
}

// LaunchAggregatedServer runs bin on the node IP with a serving certificate
// from a fresh CA and delegated authentication/authorization against the
// cluster, as the service account namespace/serviceAccount (which must
// exist). It does not wait for it to serve. extraArgs are appended.
func (c *Cluster) LaunchAggregatedServer(t TB, bin, namespace, serviceAccount, service string, extraArgs ...string) *AggregatedServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &AggregatedServer{Namespace: namespace, Service: service, c: c, port: freePortOn(t, c.NodeIP)}
	s.URL = "https://" + net.JoinHostPort(c.NodeIP.String(), strconv.Itoa(s.port))

	// A bound token, as a pod's projected token would be, rather than a
	// client certificate: this also proves the cluster issues and accepts
	// service-account tokens.
	tr, err := c.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](4 * 3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", namespace, serviceAccount, err)
	}
	s.Kubeconfig = c.TokenKubeconfig(fileSafe(namespace+":"+serviceAccount), tr.Status.Token)

	dir := filepath.Join(c.Dir, service)
	if s.ServingCA, err = NewCA(dir, service+"-ca"); err != nil {
		t.Fatal(err)
	}
	serving, err := s.ServingCA.ServingCert(service,
		[]string{service + "." + namespace + ".svc"}, []net.IP{c.NodeIP})
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--bind-address=" + c.NodeIP.String(), "--secure-port=" + strconv.Itoa(s.port),
		"--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile,
		// --kubeconfig feeds admission (namespace lifecycle, webhooks,
		// policies) and priority-and-fairness; the other two delegate
		// TokenReview/SubjectAccessReview and the front-proxy lookup.
		"--kubeconfig=" + s.Kubeconfig,
		"--authentication-kubeconfig=" + s.Kubeconfig,
		"--authorization-kubeconfig=" + s.Kubeconfig,
	}, extraArgs...)
	s.Process = StartProcess(t, c.Dir, service, bin, args...)
	return s
}

// HTTPClient reaches the server directly, trusting its serving CA and
// presenting clientCert if not nil.
func (s *AggregatedServer) HTTPClient(clientCert *KeyPair) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ServingCA.CertPEM)
	cfg := &tls.Config{RootCAs: pool}
	if clientCert != nil {
		pair, err := tls.X509KeyPair(clientCert.CertPEM, clientCert.KeyPEM)
		if err != nil {
			panic(err) // the framework wrote this pair itself
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// Expose creates a Service without selector (port 443 -> the server's port)
// and an EndpointSlice with the node IP, which is how a host process is
// published: loopback addresses are not valid endpoints.
func (s *AggregatedServer) Expose(ctx context.Context) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.Service, Namespace: s.Namespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(s.port),
		}}},
	}
	if _, err := s.c.Client.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Service + "-host", Namespace: s.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: s.Service},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{s.c.NodeIP.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{
			Name: ptr.To("https"), Port: ptr.To(int32(s.port)), Protocol: ptr.To(corev1.ProtocolTCP),
		}},
	}
	_, err := s.c.Client.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, slice, metav1.CreateOptions{})
	return err
}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// RegisterAPIService creates the APIService <version>.<group> pointing at
// the Service, with the serving CA as caBundle (TLS is verified, never
// skipped). It returns when the object is created, not when it is Available.
func (s *AggregatedServer) RegisterAPIService(ctx context.Context, group, version string, groupPriorityMinimum, versionPriority int64) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.c.AdminKubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": version + "." + group},
		"spec": map[string]any{
			"group":                group,
			"version":              version,
			"service":              map[string]any{"namespace": s.Namespace, "name": s.Service, "port": int64(443)},
			"caBundle":             base64.StdEncoding.EncodeToString(s.ServingCA.CertPEM),
			"groupPriorityMinimum": groupPriorityMinimum,
			"versionPriority":      versionPriority,
		},
	}}
	_, err = dyn.Resource(apiServiceGVR).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var loopback = net.ParseIP("127.0.0.1")

// startEtcd runs a single-member etcd on loopback and returns its client URL.
func (c *Cluster) startEtcd(opts ClusterOptions) string {
	client := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(freePortOn(c.t, loopback)))
	peer := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(freePortOn(c.t, loopback)))
	p := c.start("etcd", opts.Etcd,
		"--name=capn-test", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=capn-test="+peer, "--initial-cluster-state=new",
		// A test cluster's data is disposable; fsync only costs time.
		"--unsafe-no-fsync", "--log-level=warn")
	c.waitHealthy(p, http.DefaultClient, client+"/health", opts.StartTimeout)
	return client
}

func (c *Cluster) startAPIServer(opts ClusterOptions, pki *clusterPKI, etcdURL string, port int) {
	p := c.start("kube-apiserver", opts.KubeAPIServer,
		"--etcd-servers="+etcdURL,
		// The node IP, not 0.0.0.0: reachable from this machine only, and
		// the address aggregated servers and kubeconfigs use.
		"--bind-address="+c.NodeIP.String(), "--advertise-address="+c.NodeIP.String(),
		"--secure-port="+strconv.Itoa(port), "--cert-dir="+filepath.Join(c.Dir, "apiserver"),
		"--tls-cert-file="+pki.APIServer.CertFile, "--tls-private-key-file="+pki.APIServer.KeyFile,
		"--client-ca-file="+pki.CA.CertFile,
		"--anonymous-auth=false",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-key-file="+pki.ServiceAccountKey,
		"--service-account-signing-key-file="+pki.ServiceAccountKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range="+opts.ServiceCIDR,
		// Front proxy: how the aggregator tells aggregated servers who the
		// user is.
		"--requestheader-client-ca-file="+pki.FrontProxyCA.CertFile,
		"--requestheader-allowed-names="+FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+pki.FrontProxyClient.CertFile,
		"--proxy-client-key-file="+pki.FrontProxyClient.KeyFile,
		// No kube-proxy runs here, so ClusterIPs lead nowhere: the
		// aggregator must dial the endpoints directly.
		"--enable-aggregator-routing=true",
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// Nodes started by StartNode serve with certificates from the
		// cluster CA, so kubelet TLS is verified, never skipped.
		"--kubelet-client-certificate="+pki.KubeletClient.CertFile,
		"--kubelet-client-key="+pki.KubeletClient.KeyFile,
		"--kubelet-certificate-authority="+pki.CA.CertFile,
		"--profiling=false")
	var client *http.Client
	var err error
	if c.Client, client, err = c.adminClients(); err != nil {
		c.t.Fatalf("admin client: %v", err)
	}
	// /readyz with admin credentials: anonymous requests are disabled.
	c.waitHealthy(p, client, c.URL+"/readyz", opts.StartTimeout)
}

// startControllers starts kube-controller-manager and kube-scheduler side by
// side; both only need a ready kube-apiserver.
func (c *Cluster) startControllers(opts ClusterOptions, pki *clusterPKI) {
	kcmKC := c.certKubeconfig("kube-controller-manager", pki.ControllerManager)
	schedKC := c.certKubeconfig("kube-scheduler", pki.Scheduler)
	kcmPort, schedPort := strconv.Itoa(freePortOn(c.t, loopback)), strconv.Itoa(freePortOn(c.t, loopback))
	kcmArgs := []string{
		"--kubeconfig=" + kcmKC, "--authentication-kubeconfig=" + kcmKC, "--authorization-kubeconfig=" + kcmKC,
		"--bind-address=127.0.0.1", "--secure-port=" + kcmPort,
		"--tls-cert-file=" + pki.KCMServing.CertFile, "--tls-private-key-file=" + pki.KCMServing.KeyFile,
		"--cluster-signing-cert-file=" + pki.CA.CertFile, "--cluster-signing-key-file=" + pki.CA.KeyFile,
		"--root-ca-file=" + pki.CA.CertFile,
		"--service-account-private-key-file=" + pki.ServiceAccountKey,
		"--use-service-account-credentials=true",
		"--controllers=*", "--leader-elect=false",
		"--service-cluster-ip-range=" + opts.ServiceCIDR, "--cluster-cidr=" + opts.PodCIDR,
		"--profiling=false"}
	kcm := c.start("kube-controller-manager", opts.KubeControllerManager, append(kcmArgs, opts.ControllerManagerArgs...)...)
	schedArgs := []string{
		"--kubeconfig=" + schedKC, "--authentication-kubeconfig=" + schedKC, "--authorization-kubeconfig=" + schedKC,
		"--bind-address=127.0.0.1", "--secure-port=" + schedPort,
		"--tls-cert-file=" + pki.SchedulerServing.CertFile, "--tls-private-key-file=" + pki.SchedulerServing.KeyFile,
		"--leader-elect=false", "--profiling=false"}
	sched := c.start("kube-scheduler", opts.KubeScheduler, append(schedArgs, opts.SchedulerArgs...)...)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pki.CA.CertPEM)
	client := &http.Client{Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, w := range []struct {
		p   *Process
		url string
	}{{kcm, "https://127.0.0.1:" + kcmPort}, {sched, "https://127.0.0.1:" + schedPort}} {
		wg.Go(func() {
			d, err := w.p.WaitHealthy(client, w.url+"/healthz", opts.StartTimeout)
			errs[i] = err
			c.record(w.p.Name, d)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			c.t.Fatalf("%v", err)
		}
	}
}

// waitBootstrapped waits for what kube-apiserver's post-start hooks create
// and every later step relies on: the default and kube-system namespaces and
// the configmap aggregated servers read the front-proxy settings from.
func (c *Cluster) waitBootstrapped(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ready := func() error {
		for _, ns := range []string{"default", "kube-system"} {
			if _, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		_, err := c.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		return err
	}
	for {
		err := ready()
		if err == nil {
			return
		}
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			c.t.Logf("waiting for bootstrap objects: %v", err)
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("cluster not bootstrapped within %s: %v", timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var startupMu sync.Mutex

func (c *Cluster) record(name string, d time.Duration) {
	startupMu.Lock()
	defer startupMu.Unlock()
	c.Startup[name] = d
}

func (c *Cluster) start(name, bin string, args ...string) *Process {
	p := StartProcess(c.t, c.Dir, name, bin, args...)
	c.Processes = append(c.Processes, p)
	return p
}

func (c *Cluster) waitHealthy(p *Process, client *http.Client, url string, timeout time.Duration) {
	c.t.Helper()
	d, err := p.WaitHealthy(client, url, timeout)
	if err != nil {
		c.t.Fatalf("%v", err)
	}
	c.record(p.Name, d)
}

// RestartAPIServer stops the management kube-apiserver as a rolling
// restart would (SIGTERM, drain) and starts it again with the same flags,
// returning once it answers /readyz and how long it was away.
func (c *Cluster) RestartAPIServer(t TB) time.Duration {
	t.Helper()
	for i, p := range c.Processes {
		if p.Name != "kube-apiserver" {
			continue
		}
		began := time.Now()
		c.Processes[i] = p.Restart(t, false)
		_, client, err := c.adminClients()
		if err != nil {
			t.Fatalf("admin client: %v", err)
		}
		if _, err := c.Processes[i].WaitHealthy(client, c.URL+"/readyz", 2*time.Minute); err != nil {
			t.Fatalf("kube-apiserver after its restart: %v", err)
		}
		return time.Since(began)
	}
	t.Fatal("no kube-apiserver process in this cluster")
	return 0
}

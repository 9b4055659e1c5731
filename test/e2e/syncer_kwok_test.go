//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/pod-security-admission/api"

	"capn.dev/capn/pkg/syncer/controller"
	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/pkg/versions"
	"capn.dev/capn/test/framework"
)

const syncerWorkload = `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: default}
data: {message: hello-1}
---
apiVersion: v1
kind: Secret
metadata: {name: greeting, namespace: default}
stringData: {value: from-a-secret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: capn.dev/capn-testserver:dev
        args: [serve]
        env:
        - name: GREETING
          valueFrom: {secretKeyRef: {name: greeting, key: value}}
        volumeMounts: [{name: config, mountPath: /config}]
      volumes:
      - name: config
        configMap: {name: web-config}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
`

const syncerEscape = `apiVersion: v1
kind: Pod
metadata: {name: escape, namespace: default}
spec:
  hostNetwork: true
  containers: [{name: c, image: capn.dev/capn-testserver:dev}]
`

// TestSyncerOnKwok runs the syncer between two real control planes: a
// "tenant" one with no nodes, whose own scheduler and controllers place
// and manage its pods, and a "host" one with a kwok node standing in for
// the management cluster's nodes (kwok fakes the host pods' lifecycle; the
// real-node flow is the data-plane e2e). Everything is driven through the
// tenant's API with kubectl, as a tenant would.
func TestSyncerOnKwok(t *testing.T) {
	host := framework.StartCluster(t, clusterOptions(t))
	tenant := framework.StartCluster(t, clusterOptions(t))
	t.Setenv("KUBECACHEDIR", t.TempDir())
	nodes := host.StartKwok(t, framework.KwokOptions{Bin: env(t, "KWOK"), StageDir: env(t, "KWOK_STAGES"), Nodes: 1})
	tk := framework.Kubectl{Bin: env(t, "KUBECTL"), Kubeconfig: tenant.AdminKubeconfig}
	hk := framework.Kubectl{Bin: env(t, "KUBECTL"), Kubeconfig: host.AdminKubeconfig}
	const wl = "capn-workload"
	hk.MustRun(t, "", "create", "namespace", wl)

	u, err := url.Parse(tenant.URL)
	require.NoError(t, err)
	h, p, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(p)
	clients := func(kc string) kubernetes.Interface {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		require.NoError(t, err)
		cfg.QPS, cfg.Burst = 50, 100
		return kubernetes.NewForConfigOrDie(cfg)
	}
	// The tenant apiserver runs on this machine: it calls the Service
	// webhook on loopback.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	webhookAddr := l.Addr().String()
	require.NoError(t, l.Close())
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	opts := controller.Options{
		Tenant: clients(tenant.AdminKubeconfig), Host: clients(host.AdminKubeconfig),
		WorkloadNamespace: wl,
		HostNodeSelector:  labels.SelectorFromSet(labels.Set{"type": "kwok"}),
		HostTolerations:   []corev1.Toleration{{Key: framework.FakeNodeTaint.Key, Operator: corev1.TolerationOpExists}},
		Pod:               translate.Context{APIServerHost: h, APIServerPort: int32(port), Nameserver: "127.0.0.1", DNSDomain: "cluster.local", Level: api.LevelBaseline},
		Webhook:           controller.WebhookOptions{BindAddress: webhookAddr, AdvertiseAddress: webhookAddr},
	}
	start := func() (stop func()) {
		c, cancelRun := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = controller.New(opts).Run(c) }()
		return func() { cancelRun(); <-done }
	}
	stop := start()
	t.Cleanup(func() { stop(); cancel() })

	hostPods := func() []string {
		out := hk.MustRun(t, "", "get", "pods", "-n", wl, "-l", hostAppWeb, "-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{.status.phase}{"\n"}{end}`)
		var ps []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				ps = append(ps, f[0])
			}
		}
		return ps
	}
	waitHostPods := func(n int) {
		framework.Eventually(t, 2*time.Minute, fmt.Sprintf("%d host pods", n), func() (bool, string) {
			out := hk.Run("", "get", "pods", "-n", wl, "-l", hostAppWeb, "-o", "name")
			return len(strings.Fields(out.Stdout)) == n, out.Stdout + out.Stderr
		})
	}

	t.Run("virtual node", func(t *testing.T) {
		framework.Eventually(t, time.Minute, "virtual node Ready in the tenant", func() (bool, string) {
			r := tk.Run("", "get", "node", nodes[0], "-o", `jsonpath={.metadata.labels.capn\.dev/virtual-node} {.status.conditions[?(@.type=="Ready")].status}`)
			return r.Stdout == "true True", r.Stdout + r.Stderr
		})
	})

	t.Run("deployment runs on the host", func(t *testing.T) {
		tk.MustRun(t, syncerWorkload, "apply", "-f", "-")
		tk.MustRun(t, "", "rollout", "status", "deployment/web", "--timeout=120s")
		ips := tk.MustRun(t, "", "get", "pods", "-l", "app=web", "-o", `jsonpath={range .items[*]}{.status.podIP}{" "}{.spec.nodeName}{"\n"}{end}`)
		require.Len(t, strings.Split(strings.TrimSpace(ips), "\n"), 2, ips)
		for _, l := range strings.Split(strings.TrimSpace(ips), "\n") {
			f := strings.Fields(l)
			require.Len(t, f, 2, "every tenant pod has a podIP from the host and its virtual node: %q", l)
			require.Equal(t, nodes[0], f[1])
		}
		require.Len(t, hostPods(), 2)
		// What the host pods reference came with them, renamed.
		data := hk.MustRun(t, "", "get", "configmap", "-n", wl, names.Host("default", "web-config"), "-o", "jsonpath={.data.message}")
		require.Equal(t, "hello-1", data)
		hk.MustRun(t, "", "get", "secret", "-n", wl, names.Host("default", "greeting"))
		// The tenant's Service has its host Service, at the same ClusterIP.
		tip := tk.MustRun(t, "", "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
		framework.Eventually(t, 30*time.Second, "host Service at the tenant ClusterIP "+tip, func() (bool, string) {
			r := hk.Run("", "get", "service", "-n", wl, names.Host("default", "web"), "-o", "jsonpath={.spec.clusterIP}")
			return r.Stdout == tip, r.Stdout + r.Stderr
		})
	})

	t.Run("service webhook", func(t *testing.T) {
		framework.Eventually(t, time.Minute, "the syncer's webhook registered in the tenant", func() (bool, string) {
			r := tk.Run("", "get", "mutatingwebhookconfiguration", controller.WebhookConfigurationName, "-o", "jsonpath={.webhooks[0].clientConfig.url}")
			return r.Stdout == "https://"+webhookAddr+controller.ServiceWebhookPath, r.Stdout + r.Stderr
		})
		svc := func(name, clusterIP string) string {
			return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s}\nspec: {clusterIP: %q, selector: {app: %s}, ports: [{port: 80}]}\n", name, clusterIP, name)
		}
		// The host gives the IP: the tenant object holds what the host
		// Service holds, from the create on.
		tk.MustRun(t, svc("alloc", ""), "create", "-f", "-")
		tip := tk.MustRun(t, "", "get", "service", "alloc", "-o", "jsonpath={.spec.clusterIP}")
		var hip string
		uid := tk.MustRun(t, "", "get", "service", "alloc", "-o", "jsonpath={.metadata.uid}")
		framework.Eventually(t, 30*time.Second, "the host Service adopted by the tenant Service", func() (bool, string) {
			hip = hk.MustRun(t, "", "get", "service", "-n", wl, names.Host("default", "alloc"), "-o", "jsonpath={.spec.clusterIP} {.metadata.labels.capn\\.dev/tenant-uid}")
			return hip == tip+" "+uid, hip
		})

		// An IP the host has given to someone else: refused at create,
		// on the field, and nothing is stored on either side.
		hk.MustRun(t, "", "create", "namespace", "other")
		hk.MustRun(t, "apiVersion: v1\nkind: Service\nmetadata: {name: taken, namespace: other}\nspec: {selector: {a: b}, ports: [{port: 80}]}\n", "create", "-f", "-")
		taken := hk.MustRun(t, "", "get", "service", "-n", "other", "taken", "-o", "jsonpath={.spec.clusterIP}")
		errOut := tk.MustFail(t, svc("clash", taken), "create", "-f", "-")
		assert.Contains(t, errOut, "is invalid")
		assert.Contains(t, errOut, "spec.clusterIP")
		assert.Contains(t, tk.Run("", "get", "service", "clash").Stderr, "NotFound")
		assert.Contains(t, hk.Run("", "get", "service", "-n", wl, names.Host("default", "clash")).Stderr, "NotFound")

		// NodePort is refused at create, with the reason.
		errOut = tk.MustFail(t, "apiVersion: v1\nkind: Service\nmetadata: {name: np}\nspec: {type: NodePort, selector: {a: b}, ports: [{port: 80}]}\n", "create", "-f", "-")
		assert.Contains(t, errOut, "spec.type")

		// A dry run touches nothing on the host.
		tk.MustRun(t, svc("dry", ""), "create", "--dry-run=server", "-f", "-")
		assert.Contains(t, hk.Run("", "get", "service", "-n", wl, names.Host("default", "dry")).Stderr, "NotFound")

		// The tenant refuses the create after the webhook allocated (its
		// own quota): the host Service made for it is collected.
		tk.MustRun(t, "", "create", "namespace", "full")
		tk.MustRun(t, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: full}\nspec: {hard: {services: \"0\"}}\n", "create", "-f", "-")
		framework.Eventually(t, 30*time.Second, "the tenant quota refuses a Service", func() (bool, string) {
			r := tk.Run(svc("over", ""), "create", "-n", "full", "-f", "-")
			return r.Err != nil && strings.Contains(r.Stderr, "exceeded quota"), r.Stdout + r.Stderr
		})
		framework.Eventually(t, 2*time.Minute, "the host Service of the refused create collected", func() (bool, string) {
			r := hk.Run("", "get", "service", "-n", wl, names.Host("full", "over"))
			return strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
		})
		tk.MustRun(t, "", "delete", "service", "alloc")
	})

	t.Run("configmap update follows", func(t *testing.T) {
		tk.MustRun(t, "", "patch", "configmap", "web-config", "-p", `{"data":{"message":"hello-2"}}`)
		framework.Eventually(t, 30*time.Second, "host copy updated", func() (bool, string) {
			r := hk.Run("", "get", "configmap", "-n", wl, names.Host("default", "web-config"), "-o", "jsonpath={.data.message}")
			return r.Stdout == "hello-2", r.Stdout
		})
	})

	t.Run("host events mirrored", func(t *testing.T) {
		hc := opts.Host
		hostName := hostPods()[0]
		hp, err := hc.CoreV1().Pods(wl).Get(ctx, hostName, metav1.GetOptions{})
		require.NoError(t, err)
		id, ok := names.IdentityOf(hp.Labels, hp.Annotations)
		require.True(t, ok, "host pod %s records its tenant pod", hostName)
		tenantUID := tk.MustRun(t, "", "get", "pod", id.Name, "-o", "jsonpath={.metadata.uid}")
		require.Equal(t, tenantUID, id.UID)

		// An impostor: a host pod claiming the tenant pod's namespace and
		// name under another UID. The host scheduler cannot place it, so
		// it gets a real FailedScheduling Event, besides the one made here.
		impostor, err := hc.CoreV1().Pods(wl).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "impostor", Labels: translate.HostLabels(id.Namespace, "not-"+id.UID),
				Annotations: map[string]string{names.TenantNameAnnotation: id.Name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "capn.dev/capn-testserver:dev"}},
				NodeSelector: map[string]string{"capn.dev/e2e": "nowhere"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = hc.CoreV1().Pods(wl).Delete(context.Background(), impostor.Name, metav1.DeleteOptions{}) })
		framework.Eventually(t, time.Minute, "the host scheduler's FailedScheduling on the impostor", func() (bool, string) {
			r := hk.Run("", "get", "events", "-n", wl, "--field-selector", "involvedObject.name=impostor,reason=FailedScheduling", "-o", "name")
			return strings.TrimSpace(r.Stdout) != "", r.Stdout + r.Stderr
		})

		seq := 0
		hostEvent := func(pod *corev1.Pod, typ, reason, message string) *corev1.Event {
			seq++
			now := metav1.Now()
			ev, err := hc.CoreV1().Events(wl).Create(ctx, &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.e2e-%d", pod.Name, seq)},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: wl, Name: pod.Name, UID: pod.UID,
					FieldPath: "spec.containers{web}"},
				Type: typ, Reason: reason, Message: message, Count: 1, FirstTimestamp: now, LastTimestamp: now,
				Source: corev1.EventSource{Component: "kubelet", Host: nodes[0]},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			return ev
		}
		// Made first: the informer and the recorder keep order, so once a
		// later Event shows in the tenant these have been passed over.
		hostEvent(impostor, corev1.EventTypeWarning, "Failed", "from the impostor")
		hostEvent(hp, corev1.EventTypeNormal, "Pulled", "Successfully pulled image")
		// Not an image pull's: those carry capn's words only (unit-tested in
		// translate), so host names would not show.
		failed := hostEvent(hp, corev1.EventTypeWarning, "Failed", `Error: failed to start container "web": pod `+wl+"/"+hostName+" in "+wl)

		type mirrored struct{ reason, typ, count, message, uid, fieldPath string }
		tenantEvents := func() []mirrored {
			out := tk.MustRun(t, "", "get", "events", "--field-selector", "source=capn-syncer,involvedObject.name="+id.Name, "-o",
				`jsonpath={range .items[*]}{.reason}{"|"}{.type}{"|"}{.count}{"|"}{.message}{"|"}{.involvedObject.uid}{"|"}{.involvedObject.fieldPath}{"\n"}{end}`)
			var ms []mirrored
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if f := strings.Split(l, "|"); len(f) == 6 {
					ms = append(ms, mirrored{f[0], f[1], f[2], f[3], f[4], f[5]})
				}
			}
			return ms
		}
		want := mirrored{"Failed", "Warning", "1", `Error: failed to start container "web": pod ` + id.Namespace + "/" + id.Name + " in " + id.Namespace,
			id.UID, "spec.containers{web}"}
		framework.Eventually(t, time.Minute, "the Failed Event mirrored onto "+id.Name, func() (bool, string) {
			ms := tenantEvents()
			return len(ms) > 0, fmt.Sprint(ms)
		})
		require.Equal(t, []mirrored{want}, tenantEvents(),
			"only the allow-listed Event about the live pod's host pod, host names rewritten: not Pulled, not the host scheduler's Scheduled, nothing about the impostor")

		// An update that is not a new occurrence is not mirrored; a count
		// increase is, once. Unhealthy is a marker that comes after both.
		failed.Annotations = map[string]string{"e2e": "touched"}
		failed, err = hc.CoreV1().Events(wl).Update(ctx, failed, metav1.UpdateOptions{})
		require.NoError(t, err)
		failed.Count, failed.LastTimestamp = 2, metav1.Now()
		_, err = hc.CoreV1().Events(wl).Update(ctx, failed, metav1.UpdateOptions{})
		require.NoError(t, err)
		hostEvent(hp, corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: connection refused")
		framework.Eventually(t, time.Minute, "the Unhealthy marker mirrored", func() (bool, string) {
			ms := tenantEvents()
			return len(ms) == 2, fmt.Sprint(ms)
		})
		for _, m := range tenantEvents() {
			if m.reason == "Failed" {
				require.Equal(t, "2", m.count, "the tenant Event counts host occurrences, not host updates")
			}
		}
		out := tk.MustRun(t, "", "get", "events", "-A", "--field-selector", "source=capn-syncer", "-o", "jsonpath={.items[*].message}")
		require.NotContains(t, out, wl, "no mirrored message names the workload namespace")
		require.NotContains(t, out, "impostor")
	})

	t.Run("scale follows", func(t *testing.T) {
		tk.MustRun(t, "", "scale", "deployment/web", "--replicas=3")
		tk.MustRun(t, "", "rollout", "status", "deployment/web", "--timeout=120s")
		waitHostPods(3)
		tk.MustRun(t, "", "scale", "deployment/web", "--replicas=2")
		tk.MustRun(t, "", "rollout", "status", "deployment/web", "--timeout=120s")
		waitHostPods(2)
	})

	t.Run("host escape refused", func(t *testing.T) {
		tk.MustRun(t, syncerEscape, "apply", "-f", "-")
		framework.Eventually(t, time.Minute, "escape pod Failed with SyncRefused", func() (bool, string) {
			r := tk.Run("", "get", "pod", "escape", "-o", "jsonpath={.status.phase} {.status.reason} {.status.message}")
			return strings.HasPrefix(r.Stdout, "Failed SyncRefused") && strings.Contains(r.Stdout, "host namespaces"), r.Stdout
		})
		r := hk.Run("", "get", "pod", "-n", wl, names.Host("default", "escape"))
		require.Contains(t, r.Stderr, "NotFound", "no host pod for a refused tenant pod")
		ev := tk.MustRun(t, "", "get", "events", "--field-selector", "involvedObject.name=escape,reason=SyncRefused", "-o", "name")
		require.NotEmpty(t, strings.TrimSpace(ev), "a Warning Event tells the tenant")
	})

	t.Run("host pod deleted by hand is replaced", func(t *testing.T) {
		victim := hostPods()[0]
		hk.MustRun(t, "", "delete", "pod", "-n", wl, victim, "--wait=false")
		framework.Eventually(t, 2*time.Minute, "two Running host pods, without "+victim, func() (bool, string) {
			ps := hostPods()
			running := hk.MustRun(t, "", "get", "pods", "-n", wl, "-l", hostAppWeb, "--field-selector=status.phase=Running", "-o", "name")
			return len(ps) == 2 && !strings.Contains(strings.Join(ps, " "), victim) && len(strings.Fields(running)) == 2, strings.Join(ps, " ")
		})
		tk.MustRun(t, "", "rollout", "status", "deployment/web", "--timeout=120s")
	})

	t.Run("restart converges without duplicates", func(t *testing.T) {
		stop()
		tk.MustRun(t, "", "scale", "deployment/web", "--replicas=3")
		stop = start()
		tk.MustRun(t, "", "rollout", "status", "deployment/web", "--timeout=120s")
		waitHostPods(3)
	})

	t.Run("dns addon", func(t *testing.T) {
		// The addon's own objects, kept by the syncer: created, restored
		// after a delete or an edit, kube-dns again at its old address,
		// host pods pointed at it, and removed when DNS is turned off.
		stop()
		opts.DNS = controller.DNSOptions{Enabled: true, Image: versions.CoreDNSImage}
		stop = start()
		get := func(kind, name, jsonpath string) framework.Result {
			return tk.Run("", "get", "-n", names.DNSNamespace, kind, name, "-o", "jsonpath="+jsonpath)
		}
		var dnsIP string
		framework.Eventually(t, time.Minute, "the DNS addon in the tenant, kube-dns with an address", func() (bool, string) {
			r := get("service", names.DNSServiceName, "{.spec.clusterIP}")
			dnsIP = r.Stdout
			d := get("deployment", names.DNSName, "{.spec.template.spec.containers[0].image}")
			return r.Err == nil && dnsIP != "" && d.Stdout == versions.CoreDNSImage, r.Stdout + r.Stderr + d.Stdout + d.Stderr
		})
		framework.Eventually(t, 30*time.Second, "the host kube-dns at the tenant's address", func() (bool, string) {
			r := hk.Run("", "get", "service", "-n", wl, names.Host(names.DNSNamespace, names.DNSServiceName), "-o", "jsonpath={.spec.clusterIP}")
			return r.Stdout == dnsIP, r.Stdout + r.Stderr
		})
		// A new pod resolves through kube-dns.
		tk.MustRun(t, "", "scale", "deployment/web", "--replicas=4")
		framework.Eventually(t, time.Minute, "host pods of web use kube-dns", func() (bool, string) {
			out := hk.MustRun(t, "", "get", "pods", "-n", wl, "-l", hostAppWeb, "-o", `jsonpath={range .items[*]}{.spec.dnsConfig.nameservers[0]} {end}`)
			return strings.Contains(out, dnsIP), out
		})

		uid := get("deployment", names.DNSName, "{.metadata.uid}").Stdout
		tk.MustRun(t, "", "delete", "-n", names.DNSNamespace, "deployment", names.DNSName)
		framework.Eventually(t, time.Minute, "the deleted coredns Deployment recreated", func() (bool, string) {
			r := get("deployment", names.DNSName, "{.metadata.uid}")
			return r.Err == nil && r.Stdout != "" && r.Stdout != uid, r.Stdout + r.Stderr
		})
		tk.MustRun(t, "", "patch", "-n", names.DNSNamespace, "configmap", names.DNSName, "-p", `{"data":{"Corefile":".:53 {\n forward . 192.0.2.1\n}\n"}}`)
		framework.Eventually(t, time.Minute, "the edited Corefile restored", func() (bool, string) {
			r := get("configmap", names.DNSName, "{.data.Corefile}")
			return strings.Contains(r.Stdout, "rcode NXDOMAIN") && !strings.Contains(r.Stdout, "forward"), r.Stdout
		})
		tk.MustRun(t, "", "delete", "-n", names.DNSNamespace, "service", names.DNSServiceName)
		framework.Eventually(t, time.Minute, "kube-dns recreated at "+dnsIP, func() (bool, string) {
			r := get("service", names.DNSServiceName, "{.spec.clusterIP}")
			return r.Stdout == dnsIP, r.Stdout + r.Stderr
		})

		stop()
		opts.DNS = controller.DNSOptions{}
		stop = start()
		framework.Eventually(t, time.Minute, "the addon removed with DNS off", func() (bool, string) {
			out := tk.MustRun(t, "", "get", "-n", names.DNSNamespace, "deployments,services,configmaps,serviceaccounts",
				"-l", "app.kubernetes.io/name="+names.DNSName, "-o", "name")
			return strings.TrimSpace(out) == "", out
		})
		tk.MustRun(t, "", "scale", "deployment/web", "--replicas=3")
	})

	t.Run("delete removes host objects", func(t *testing.T) {
		tk.MustRun(t, "", "delete", "deployment", "web", "--wait=true", "--timeout=120s")
		tk.MustRun(t, "", "delete", "service", "web")
		framework.Eventually(t, 2*time.Minute, "no host pods or Service", func() (bool, string) {
			out := hk.MustRun(t, "", "get", "pods,services", "-n", wl, "-l", hostAppWeb, "-o", "name")
			svc := hk.Run("", "get", "service", "-n", wl, names.Host("default", "web"))
			return strings.TrimSpace(out) == "" && strings.Contains(svc.Stderr, "NotFound"), out + svc.Stdout
		})
	})
}

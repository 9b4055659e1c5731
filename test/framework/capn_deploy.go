package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// Where and how the manifests in artifacts/deploy run capn-apiserver.
const (
	CapnNamespace   = "capn-system"
	CapnService     = "capn-apiserver"
	CapnPodSelector = "app.kubernetes.io/name=capn-apiserver"
	CapnAPIService  = "v1alpha1.capn.dev"
	// CapnDevEtcdDir is the dev overlay's hostPath volume
	// (artifacts/deploy/overlays/dev/volume.yaml).
	CapnDevEtcdDir = "/var/lib/capn-dev/etcd"
	// capnUID is capn-apiserver's user in its image.
	capnUID = 65532
)

// CapnDeployment is capn-apiserver deployed by DeployCapn.
type CapnDeployment struct {
	// Dir is the copy of artifacts/deploy that was applied, with the
	// serving certificate in overlays/dev/certs.
	Dir string
	// ServingCA signs capn-apiserver's serving certificate (the APIService's
	// caBundle).
	ServingCA *CA
	// Pod is the Ready capn-apiserver pod.
	Pod *corev1.Pod
	// PodReady and Available are the times from `kubectl apply -k` to a
	// Ready pod and to the APIService's Available condition.
	PodReady, Available time.Duration
}

// DeployCapn deploys capn-apiserver onto node n of c the way users do:
// `kubectl apply -k` of the dev overlay (from a copy of repoRoot's
// artifacts/deploy, with a fresh serving certificate), then waits for a
// Ready pod and an Available APIService. The dev overlay's hostPath
// directory is emptied first and removed after the node's teardown.
func DeployCapn(t TB, c *Cluster, n *Node, k Kubectl, repoRoot string) *CapnDeployment {
	t.Helper()
	return DeployCapnWith(t, c, n, k, repoRoot, CapnDeployOptions{})
}

// CapnDeployOptions change the copy of the manifests DeployCapn applies.
type CapnDeployOptions struct {
	// ExtraArgs are appended to capn-apiserver's container args (by a
	// kustomize patch in the copied dev overlay), e.g. --provisioner=pods.
	ExtraArgs []string
}

// DeployCapnWith is DeployCapn with options.
func DeployCapnWith(t TB, c *Cluster, n *Node, k Kubectl, repoRoot string, opts CapnDeployOptions) *CapnDeployment {
	t.Helper()
	// The node lock is held (StartNode), so no other process's pod uses it.
	prepareCapnDevEtcdDir(t, n)
	d := &CapnDeployment{Dir: filepath.Join(t.TempDir(), "deploy")}
	if err := copyTree(filepath.Join(repoRoot, "artifacts", "deploy"), d.Dir); err != nil {
		t.Fatalf("copying the manifests: %v", err)
	}
	d.ServingCA = writeCapnServingCerts(t, filepath.Join(d.Dir, "overlays", "dev", "certs"))
	if len(opts.ExtraArgs) > 0 {
		if err := addCapnArgs(filepath.Join(d.Dir, "overlays", "dev"), opts.ExtraArgs); err != nil {
			t.Fatalf("patching the container args: %v", err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	applied := time.Now()
	k.MustRun(t, "", "apply", "-k", filepath.Join(d.Dir, "overlays", "dev"))
	d.Pod = WaitCapnPod(ctx, t, c, "")
	d.PodReady = time.Since(applied)
	WaitCapnAPIServiceAvailable(ctx, t, c)
	d.Available = time.Since(applied)
	t.Logf("capn-apiserver: pod %s Ready %s after apply, APIService Available %s after apply",
		d.Pod.Name, d.PodReady.Round(time.Millisecond), d.Available.Round(time.Millisecond))
	return d
}

// WaitCapnPod waits for a Ready capn-apiserver pod other than notName.
func WaitCapnPod(ctx context.Context, t TB, c *Cluster, notName string) *corev1.Pod {
	t.Helper()
	var ready *corev1.Pod
	Eventually(t, 3*time.Minute, "a Ready capn-apiserver pod", func() (bool, string) {
		pods, err := c.Client.CoreV1().Pods(CapnNamespace).List(ctx, metav1.ListOptions{LabelSelector: CapnPodSelector})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for i, p := range pods.Items {
			seen = append(seen, p.Name+":"+string(p.Status.Phase))
			if p.Name == notName || p.DeletionTimestamp != nil {
				continue
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready = &pods.Items[i]
					return true, ""
				}
			}
		}
		return false, strings.Join(seen, ", ")
	})
	return ready
}

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// WaitCapnAPIServiceAvailable waits for the APIService v1alpha1.capn.dev
// to be Available: the aggregator reaches capn-apiserver.
func WaitCapnAPIServiceAvailable(ctx context.Context, t TB, c *Cluster) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	Eventually(t, 2*time.Minute, "APIService "+CapnAPIService+" Available", func() (bool, string) {
		obj, err := dyn.Resource(apiServices).Get(ctx, CapnAPIService, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Available" {
				return m["status"] == "True", fmt.Sprintf("%v: %v", m["reason"], m["message"])
			}
		}
		return false, "no Available condition"
	})
}

// writeCapnServingCerts writes capn's serving certificate, for the
// Service's DNS name, and its CA where the dev overlay's secretGenerator
// reads them.
func writeCapnServingCerts(t TB, dir string) *CA {
	t.Helper()
	ca, err := NewCA(t.TempDir(), "capn-serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.ServingCert("capn-apiserver", []string{CapnService + "." + CapnNamespace + ".svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(dir, map[string][]byte{"tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM, "ca.crt": ca.CertPEM}); err != nil {
		t.Fatal(err)
	}
	return ca
}

// prepareCapnDevEtcdDir gives the dev overlay's hostPath volume a fresh,
// empty directory owned by capn-apiserver's uid; it is removed after n's
// teardown, once no container uses it. Data left by an earlier run is
// removed: a deployment starts with an empty store.
func prepareCapnDevEtcdDir(t TB, n *Node) {
	t.Helper()
	parent := filepath.Dir(CapnDevEtcdDir)
	if entries, _ := os.ReadDir(CapnDevEtcdDir); len(entries) > 0 {
		t.Logf("removing data left in %s by an earlier run", CapnDevEtcdDir)
	}
	removeNowAndAfterTeardown(t, n, parent)
	if err := os.MkdirAll(CapnDevEtcdDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(CapnDevEtcdDir, capnUID, capnUID); err != nil {
		t.Fatal(err)
	}
}

// removeNowAndAfterTeardown removes dir, so that a deployment starts with
// no data left by an earlier run, and again after n's teardown, once no
// container uses it.
func removeNowAndAfterTeardown(t TB, n *Node, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	n.AfterTeardown(func() error {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing %s: %w", dir, err)
		}
		return nil
	})
}

// addCapnArgs adds a JSON patch to the dev overlay at dir that appends args
// to capn-apiserver's container args.
func addCapnArgs(dir string, args []string) error {
	const patchFile = "extra-args.yaml"
	var b strings.Builder
	for _, a := range args {
		// JSON strings are valid YAML scalars.
		v, err := json.Marshal(a)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "- {op: add, path: /spec/template/spec/containers/0/args/-, value: %s}\n", v)
	}
	if err := os.WriteFile(filepath.Join(dir, patchFile), []byte(b.String()), 0o644); err != nil {
		return err
	}
	kpath := filepath.Join(dir, "kustomization.yaml")
	k, err := os.ReadFile(kpath)
	if err != nil {
		return err
	}
	const key = "\npatches:\n"
	if !strings.Contains(string(k), key) {
		return fmt.Errorf("%s has no top-level patches list", kpath)
	}
	entry := "- path: " + patchFile + "\n  target: {kind: Deployment, name: capn-apiserver}\n"
	return os.WriteFile(kpath, []byte(strings.Replace(string(k), key, key+entry, 1)), 0o644)
}

// copyTree copies the regular files under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The local cluster's dynamic storage provisioner: upstream's
// local-path-provisioner, deployed from artifacts/deploy/local-path-storage
// (docs/storage.md). Its volumes are directories under the node's own
// directory, so the node's teardown (and the reaping of a killed run's
// node) removes them with the rest of the node.
const (
	StorageNamespace   = "local-path-storage"
	StorageClass       = "local-path"
	StorageProvisioner = "rancher.io/local-path"
	StoragePodSelector = "app.kubernetes.io/name=local-path-provisioner"
	// storageHelperImagePrefix names the busybox image hack/build-images.sh
	// builds from Debian's busybox-static; its tag is Debian's version.
	storageHelperImagePrefix = "capn.dev/busybox:"
	// storageDirName is the volumes' parent directory inside the node's.
	storageDirName = "local-path-provisioner"
	// storageHelperContainer is the name the provisioner reads a helper
	// pod's logs by.
	storageHelperContainer = "helper-pod"
)

// StorageDeployment is the provisioner DeployStorage started.
type StorageDeployment struct {
	// Dir is where volumes live: one directory per volume, inside the
	// node's directory.
	Dir string
	// HelperImage is the busybox image helper pods run.
	HelperImage string
	// Pod is the Ready provisioner pod.
	Pod *corev1.Pod
	// Ready is the time from `kubectl apply -k` to a Ready pod.
	Ready time.Duration
}

// DeployStorage deploys the local cluster's dynamic storage provisioner
// onto node n of c and makes local-path the default StorageClass: `kubectl
// apply -k` of a copy of repoRoot's artifacts/deploy/local-path-storage
// with this node's config.json and helperPod.yaml written into it, then a
// wait for the provisioner pod to be Ready. The images come from the
// node's containerd (_output/images.tar): no registry is reachable.
func DeployStorage(t TB, c *Cluster, n *Node, k Kubectl, repoRoot string) *StorageDeployment {
	t.Helper()
	helper, err := n.storageHelperImage()
	if err != nil {
		t.Fatalf("storage helper image: %v", err)
	}
	d := &StorageDeployment{Dir: filepath.Join(n.Dir, storageDirName), HelperImage: helper}
	// Helper pods would create it too (hostPath DirectoryOrCreate); made
	// here so that it exists, owned by root, before the first claim.
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	config, err := LocalPathConfig(n.Name, d.Dir)
	if err != nil {
		t.Fatalf("local-path config.json: %v", err)
	}
	helperPod, err := LocalPathHelperPod(helper)
	if err != nil {
		t.Fatalf("local-path helperPod.yaml: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "local-path-storage")
	if err := copyTree(filepath.Join(repoRoot, "artifacts", "deploy", "local-path-storage"), dir); err != nil {
		t.Fatalf("copying the manifests: %v", err)
	}
	if err := writeFiles(dir, map[string][]byte{"config.json": config, "helperPod.yaml": helperPod}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	applied := time.Now()
	k.MustRun(t, "", "apply", "-k", dir)
	Eventually(t, 2*time.Minute, "a Ready local-path-provisioner pod", func() (bool, string) {
		pods, err := c.Client.CoreV1().Pods(StorageNamespace).List(ctx, metav1.ListOptions{LabelSelector: StoragePodSelector})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for i, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				d.Pod = &pods.Items[i]
				return true, ""
			}
			seen = append(seen, p.Name+":"+podState(&p))
		}
		return false, strings.Join(seen, ", ")
	})
	d.Ready = time.Since(applied)
	t.Logf("storage: %s Ready %s after apply; StorageClass %s (default), volumes in %s, helper %s",
		d.Pod.Name, d.Ready.Round(time.Millisecond), StorageClass, d.Dir, d.HelperImage)
	return d
}

// storageHelperImage finds the busybox image on the node: its tag follows
// Debian's package version, which only hack/build-images.sh knows.
func (n *Node) storageHelperImage() (string, error) {
	out, err := n.ctr("images", "list", "--quiet")
	if err != nil {
		return "", fmt.Errorf("ctr images list: %w: %s", err, out)
	}
	var found []string
	for _, ref := range hostLines(out) {
		// The CRI plugin also lists every image by digest.
		if strings.HasPrefix(ref, storageHelperImagePrefix) {
			found = append(found, ref)
		}
	}
	slices.Sort(found)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no %s* image on node %s (build it with `make images`)", storageHelperImagePrefix, n.Name)
	default:
		return "", fmt.Errorf("more than one %s* image on node %s: %s", storageHelperImagePrefix, n.Name, strings.Join(found, ", "))
	}
}

// localPathNodePaths is one entry of config.json's nodePathMap.
type localPathNodePaths struct {
	Node  string   `json:"node"`
	Paths []string `json:"paths"`
}

// LocalPathConfig is local-path-provisioner's config.json for one node:
// volumes under dir on node, and nowhere else. A claim whose pod lands on
// another node fails to provision rather than using a directory that node
// does not have.
func LocalPathConfig(node, dir string) ([]byte, error) {
	if node == "" {
		return nil, fmt.Errorf("no node name")
	}
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
		return nil, fmt.Errorf("volume directory %q is not a clean absolute path below /", dir)
	}
	b, err := json.MarshalIndent(struct {
		NodePathMap []localPathNodePaths `json:"nodePathMap"`
	}{[]localPathNodePaths{{Node: node, Paths: []string{dir}}}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// LocalPathHelperPod is local-path-provisioner's helperPod.yaml: the pod it
// copies to create or remove a volume's directory (running the ConfigMap's
// setup or teardown with sh), on image. The provisioner adds the command,
// the volumes, the node and a toleration of every taint.
func LocalPathHelperPod(image string) ([]byte, error) {
	if image == "" {
		return nil, fmt.Errorf("no helper image")
	}
	// A JSON string is a YAML scalar: the image needs no escaping rules of
	// its own.
	img, err := json.Marshal(image)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata:
  name: helper-pod
spec:
  # Before ordinary pods: a claim's pod waits for this one.
  priorityClassName: system-node-critical
  tolerations:
  - key: node.kubernetes.io/disk-pressure
    operator: Exists
    effect: NoSchedule
  containers:
  - name: %s
    image: %s
    # From the node's images (_output/images.tar): no registry is reachable.
    imagePullPolicy: IfNotPresent
`, storageHelperContainer, img)
	return b.Bytes(), nil
}

// podReady says whether p's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState is p's phase and, for a container that waits, why (an image
// that is not on the node shows as ErrImageNeverPull or ImagePullBackOff).
func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			s += "/" + cs.Name + ":" + w.Reason
		}
	}
	return s
}

package framework

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/local-path/* from the builders")

// storageManifests is the directory DeployStorage applies a copy of.
const storageManifests = "../../artifacts/deploy/local-path-storage"

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "local-path", name)
	if *updateGolden {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write it")
	assert.Equal(t, string(want), string(got), "%s differs; run with -update if the change is meant", path)
}

func TestLocalPathConfig(t *testing.T) {
	got, err := LocalPathConfig("capn-node-0123abcd", "/tmp/run/001/node-0123abcd/local-path-provisioner")
	require.NoError(t, err)
	golden(t, "config.json", got)

	for _, tc := range []struct{ node, dir string }{
		{"", "/var/lib/x"},
		{"n", "relative/dir"},
		{"n", "/"},
		{"n", "/var/lib/../x"},
		{"n", "/var/lib/x/"},
	} {
		_, err := LocalPathConfig(tc.node, tc.dir)
		assert.Error(t, err, "node %q dir %q", tc.node, tc.dir)
	}
}

func TestLocalPathHelperPod(t *testing.T) {
	got, err := LocalPathHelperPod("capn.dev/busybox:1.35.0-4-deb12u1-b1")
	require.NoError(t, err)
	golden(t, "helperPod.yaml", got)

	// What the provisioner relies on: it decodes the file into a Pod and
	// reads the logs of the container by this name.
	var pod corev1.Pod
	require.NoError(t, yaml.UnmarshalStrict(got, &pod))
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, storageHelperContainer, c.Name)
	assert.Equal(t, "capn.dev/busybox:1.35.0-4-deb12u1-b1", c.Image)
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy)
	assert.True(t, strings.HasPrefix(c.Image, storageHelperImagePrefix), "hack/build-images.sh names the image %s<tag>", storageHelperImagePrefix)

	_, err = LocalPathHelperPod("")
	assert.Error(t, err)
}

// TestStorageManifests checks the committed manifests against what the
// framework and hack/build-images.sh assume of them.
func TestStorageManifests(t *testing.T) {
	docs := map[string][]byte{}
	for _, f := range []string{"deployment.yaml", "storageclass.yaml", "kustomization.yaml"} {
		b, err := os.ReadFile(filepath.Join(storageManifests, f))
		require.NoError(t, err)
		docs[f] = b
	}

	var sc storagev1.StorageClass
	require.NoError(t, yaml.UnmarshalStrict(docs["storageclass.yaml"], &sc))
	assert.Equal(t, StorageClass, sc.Name)
	assert.Equal(t, StorageProvisioner, sc.Provisioner)
	assert.Equal(t, "true", sc.Annotations["storageclass.kubernetes.io/is-default-class"])
	require.NotNil(t, sc.VolumeBindingMode)
	assert.Equal(t, storagev1.VolumeBindingWaitForFirstConsumer, *sc.VolumeBindingMode)
	require.NotNil(t, sc.ReclaimPolicy)
	assert.Equal(t, corev1.PersistentVolumeReclaimDelete, *sc.ReclaimPolicy)
	require.NotNil(t, sc.AllowVolumeExpansion)
	assert.True(t, *sc.AllowVolumeExpansion)

	var dep appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict(docs["deployment.yaml"], &dep))
	assert.Equal(t, StorageNamespace, dep.Namespace)
	k, v, _ := strings.Cut(StoragePodSelector, "=")
	assert.Equal(t, v, dep.Spec.Template.Labels[k], "DeployStorage waits for pods by %s", StoragePodSelector)
	require.Len(t, dep.Spec.Template.Spec.Containers, 1)
	// The image hack/build-images.sh packs: upstream's name at the
	// version hack/tools/local-path-provisioner pins.
	gomod, err := os.ReadFile("../../hack/tools/local-path-provisioner/go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/rancher/local-path-provisioner (v\S+)`).FindSubmatch(gomod)
	require.NotNil(t, m, "hack/tools/local-path-provisioner/go.mod requires no local-path-provisioner")
	assert.Equal(t, "docker.io/rancher/local-path-provisioner:"+string(m[1]), dep.Spec.Template.Spec.Containers[0].Image)

	// DeployStorage writes these two into its copy; the others are here.
	for _, f := range []string{"config.json", "helperPod.yaml", "setup", "teardown"} {
		assert.True(t, bytes.Contains(docs["kustomization.yaml"], []byte("\n  - "+f+"\n")), "configMapGenerator lists %s", f)
	}
	for _, f := range []string{"setup", "teardown"} {
		b, err := os.ReadFile(filepath.Join(storageManifests, f))
		require.NoError(t, err)
		assert.Contains(t, string(b), `"$VOL_DIR"`)
	}
}

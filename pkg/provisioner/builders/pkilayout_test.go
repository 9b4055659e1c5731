package builders

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every pod sees the same PKI files with the per-component layout as it
// did with the logical Secrets, byte for byte, and each component's Secret
// holds exactly the files its pod mounts: no pod, and no kubelet that runs
// one, can read a key it could not read before.
func TestPKILayoutMountsWhatEachPodMountedBefore(t *testing.T) {
	for _, name := range []string{"minimal", "shared", "external-etcd", "pooled", "ha-pvc"} {
		t.Run(name, func(t *testing.T) {
			nc := decodeNestedCluster(t, filepath.Join("testdata", name, "input.yaml"))
			p, ok := goldenParams[name]
			if !ok {
				p = defaultParams
			}
			// Logical data where each value names its Secret and key.
			logical := map[string]map[string][]byte{}
			put := func(secret, key string) {
				if logical[secret] == nil {
					logical[secret] = map[string][]byte{}
				}
				logical[secret][key] = []byte(secret + "/" + key)
			}
			for _, f := range rootFiles {
				put(f.secret, f.key)
			}
			for _, c := range pkiComponents(nc) {
				for _, f := range c.files {
					put(f.secret, f.key)
				}
			}
			stored := map[string]map[string][]byte{}
			for name, d := range logical {
				if copiedSecrets[name] {
					stored[name] = d
				}
			}
			for _, s := range PKILayout(nc) {
				stored[s.Name] = map[string][]byte{}
				for _, f := range s.Files {
					stored[s.Name][f.Key] = logical[f.Logical][f.LogicalKey]
				}
			}

			before := p
			before.TemplateRevision = PKISecretTemplateRevision - 1
			old, err := All(nc, before)
			require.NoError(t, err)
			now, err := All(nc, p)
			require.NoError(t, err)
			oldFiles, newFiles := pkiMounts(t, old, logical), pkiMounts(t, now, stored)
			require.NotEmpty(t, newFiles)
			assert.Equal(t, oldFiles, newFiles)

			for _, c := range pkiComponents(nc) {
				secret := stored[c.component+"-pki"]
				mounted := newFiles[c.component]
				for key := range secret {
					_, ok := mounted[key]
					assert.True(t, ok, "%s-pki holds %s, which its pod does not mount", c.component, key)
				}
			}
		})
	}
}

// pkiMounts resolves each workload's "pki" volume against stored: the
// component → file → bytes its pods see. A missing key fails: the kubelet
// would not start the pod.
func pkiMounts(t *testing.T, objs []Object, stored map[string]map[string][]byte) map[string]map[string][]byte {
	t.Helper()
	out := map[string]map[string][]byte{}
	for _, o := range objs {
		spec := podSpecFor(o)
		if spec == nil {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != "pki" || v.Projected == nil {
				continue
			}
			files := map[string][]byte{}
			for _, src := range v.Projected.Sources {
				require.NotNil(t, src.Secret, "%s: a pki source that is not a Secret", o.GetName())
				for _, item := range src.Secret.Items {
					val, ok := stored[src.Secret.Name][item.Key]
					require.True(t, ok, "%s mounts %s/%s, which is not stored", o.GetName(), src.Secret.Name, item.Key)
					files[item.Path] = val
				}
			}
			out[spec.Containers[0].Name] = files
		}
	}
	return out
}

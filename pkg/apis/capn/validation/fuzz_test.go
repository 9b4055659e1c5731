package validation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/install"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// maxFuzzInput bounds a manifest: the decoder's cost grows with the input,
// and nothing a user writes by hand is larger.
const maxFuzzInput = 64 << 10

// fuzzCodecs is its own scheme, not the other tests' testScheme, so the
// fuzz target decodes exactly like the apiserver whatever those helpers
// turn into.
var fuzzCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	install.Install(s)
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// fuzzSeeds are manifests that reach deep into validation: every golden
// input and example, plus shapes an attacker would try first.
var fuzzSeeds = []string{
	// Finalizers, owner references and a deletion timestamp in metadata:
	// the API server drops the timestamp; the rest is validated.
	`apiVersion: capn.dev/v1alpha1
kind: NestedCluster
metadata:
  name: fin
  finalizers: [capn.dev/provisioner, example.com/keep]
  deletionTimestamp: "2030-01-01T00:00:00Z"
  deletionGracePeriodSeconds: 9223372036854775807
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: x, uid: 00000009-0000-4000-8000-000000000009}
spec: {}
`,
	`{"apiVersion":"capn.dev/v1alpha1","kind":"NestedCluster","metadata":{"generateName":"gen-"},"spec":{"paused":true}}`,
	// A pod template with everything the allow-list refuses.
	`apiVersion: capn.dev/v1alpha1
kind: NestedCluster
metadata: {name: hostile}
spec:
  controllerManager:
    podTemplate:
      metadata:
        finalizers: [x/y]
        labels: {capn.dev/component: etcd}
      spec:
        terminationGracePeriodSeconds: 9223372036854775807
        hostNetwork: true
        hostPID: true
        nodeName: node-1
        priorityClassName: system-node-critical
        tolerations: [{operator: Exists}]
        volumes:
        - {name: root, hostPath: {path: /}}
        containers:
        - name: side
          image: busybox
          securityContext: {privileged: true, capabilities: {drop: [NET_ADMIN]}}
        - name: kube-controller-manager
          image: evil.example.com/kcm:latest
          args: [--use-service-account-credentials=false]
`,
	// Allowed, near the bounds.
	`apiVersion: capn.dev/v1alpha1
kind: NestedCluster
metadata: {name: bounds, labels: {a: b}}
spec:
  version: v1.36.3
  clusterNetwork: {serviceCIDR: 172.20.0.0/16, podCIDR: 10.0.0.0/8, dnsDomain: tenant.example}
  apiServer:
    replicas: 10
    certSANs: ["*.example.com", "2001:db8::1"]
    service: {type: NodePort, port: 65535}
    podTemplate:
      spec:
        terminationGracePeriodSeconds: 60
        securityContext: {runAsUser: 2147483647, runAsNonRoot: true, supplementalGroups: [1]}
        initContainers:
        - {name: warm, image: busybox, restartPolicy: Always}
        containers:
        - name: kube-apiserver
          resources: {limits: {cpu: "16", memory: 64Gi}, requests: {cpu: "16"}}
          env:
          - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        volumes:
        - {name: t, emptyDir: {medium: Memory, sizeLimit: 10Gi}}
  scheduler:
    command: [/bin/sched]
    extraArgs: {v: "4"}
  etcd:
    external:
      endpoints: ["https://[2001:db8::2]:2379"]
      caSecretRef: {name: ca}
      clientSecretRef: {name: client}
`,
}

// FuzzDecodeDefaultValidate runs a manifest down the apiserver's write path
// (strict decode, defaulting, conversion, validation) and checks what
// validation promises the registry: it never panics, it is a pure function
// of the object, what it accepts survives storage (encode, decode) and
// stays valid, and an update that changes nothing, or only what an update
// may change, is never refused.
func FuzzDecodeDefaultValidate(f *testing.F) {
	paths, err := filepath.Glob("../../../provisioner/builders/testdata/*/input.yaml")
	require.NoError(f, err)
	examples, err := filepath.Glob("../../../../artifacts/examples/*.yaml")
	require.NoError(f, err)
	paths = append(paths, examples...)
	require.NotEmpty(f, paths)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(data)
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		nc, ok := decodeForCreate(data)
		if !ok {
			t.Skip()
		}
		before := nc.DeepCopy()
		errs := ValidateNestedCluster(nc)
		require.True(t, apiequality.Semantic.DeepEqual(before, nc), "ValidateNestedCluster mutated its input")
		// Compared as sets: apimachinery's label and annotation checks
		// range over maps, so their errors come in random order.
		require.ElementsMatch(t, errorStrings(errs), errorStrings(ValidateNestedCluster(nc)), "validation is not deterministic")
		require.ElementsMatch(t, errorStrings(errs), errorStrings(ValidateNestedCluster(nc.DeepCopy())), "validation depends on more than the object's value")

		// The registry's update path: the stored object and the request
		// both carry a resourceVersion, and PrepareForUpdate copies status.
		oldNC := nc.DeepCopy()
		oldNC.ResourceVersion = "1"
		same := oldNC.DeepCopy()
		updErrs := ValidateNestedClusterUpdate(same, oldNC)
		require.True(t, apiequality.Semantic.DeepEqual(oldNC, same), "ValidateNestedClusterUpdate mutated its input")

		// Ratcheting only ever drops errors: an unchanged object cannot
		// be refused for its spec on update more than on create.
		createSpec := specErrors(errs)
		for _, e := range specErrors(updErrs) {
			require.Contains(t, createSpec, e, "update with old == new reports a spec error create does not")
		}

		if len(errs) > 0 {
			return
		}
		require.Empty(t, updErrs, "a valid object is refused on an update that changes nothing")

		// What is stored is the v1alpha1 encoding; reading it back must
		// give the same object, still valid.
		encoded, err := runtime.Encode(fuzzCodecs.LegacyCodec(v1alpha1.SchemeGroupVersion), nc)
		require.NoError(t, err)
		again, ok := decodeForCreate(encoded)
		require.True(t, ok, "the encoding of a valid object does not decode:\n%s", encoded)
		require.True(t, apiequality.Semantic.DeepEqual(nc, again), "encode/decode changed a valid object:\n%s", encoded)
		require.Empty(t, ValidateNestedCluster(again), "a valid object is invalid after encode/decode:\n%s", encoded)

		// Changes a user makes every day (labels, pause, scale) on a
		// valid object must stay valid; they touch no immutable field
		// and no skew rule.
		changed := oldNC.DeepCopy()
		if changed.Labels == nil {
			changed.Labels = map[string]string{}
		}
		changed.Labels["fuzz.example.com/touched"] = "true"
		changed.Spec.Paused = !changed.Spec.Paused
		changed.Spec.APIServer.Replicas = ptr.To(*changed.Spec.APIServer.Replicas%maxComponentReplicas + 1)
		changed.Spec.ControllerManager.Replicas = ptr.To(*changed.Spec.ControllerManager.Replicas%maxComponentReplicas + 1)
		require.Empty(t, ValidateNestedClusterUpdate(changed, oldNC), "a valid object is refused a label, pause and scale update")
	})
}

// decodeForCreate decodes data as the apiserver does for a create: strict
// decoding, defaulting and conversion to the internal version, then what
// rest.BeforeCreate does before validating (request namespace, no deletion
// fields, the strategy's PrepareForCreate, a generated name). ok is false
// when the API would refuse the request before validation.
func decodeForCreate(data []byte) (*capn.NestedCluster, bool) {
	obj, _, err := fuzzCodecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, false
	}
	nc, ok := obj.(*capn.NestedCluster)
	if !ok {
		return nil, false
	}
	if nc.Namespace == "" {
		nc.Namespace = "default"
	}
	nc.DeletionTimestamp, nc.DeletionGracePeriodSeconds = nil, nil
	nc.Status = capn.NestedClusterStatus{}
	nc.Generation = 1
	if nc.Name == "" && nc.GenerateName != "" {
		// Fixed rather than random: the fuzz target must be reproducible.
		nc.Name = nc.GenerateName + "fuzzz"
	}
	return nc, true
}

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func specErrors(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		if strings.HasPrefix(e.Field, "spec.") || e.Field == "spec" {
			out = append(out, e.Error())
		}
	}
	return out
}

package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

// Each case is a template the API accepted before and the podTemplate
// merge turned into a broken pod or one whose capn-owned parts the tenant
// chose (found by FuzzPodTemplateMerge; its seeds are in
// builders/testdata/fuzz).
func TestValidatePodTemplateShape(t *testing.T) {
	side := func(c corev1.Container) func(nc *capn.NestedCluster) {
		return func(nc *capn.NestedCluster) { s := tpl(nc); s.Containers = append(s.Containers, c) }
	}
	ctr1 := pod + ".containers[1]"
	runInvalid(t, []invalidCase{
		{"capn's env redirected", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].Env = []corev1.EnvVar{{Name: "CAPN_POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}}}
		}, wantErr{ctr0 + ".env[0].name", field.ErrorTypeForbidden, "set by capn"}},
		{"capn's env through spec env", func(nc *capn.NestedCluster) { env(nc, corev1.EnvVar{Name: "CAPN_POD_NAME", Value: "x"}) },
			wantErr{api + ".env[0].name", field.ErrorTypeForbidden, "set by capn"}},
		{"volume without a name", func(nc *capn.NestedCluster) {
			tpl(nc).Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, wantErr{pod + ".volumes[0].name", field.ErrorTypeRequired, ""}},
		{"volume without a source", func(nc *capn.NestedCluster) { tpl(nc).Volumes = []corev1.Volume{{Name: "empty"}} },
			wantErr{pod + ".volumes[0]", field.ErrorTypeInvalid, "exactly one source"}},
		{"duplicate volumes", func(nc *capn.NestedCluster) {
			v := corev1.Volume{Name: "0", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
			tpl(nc).Volumes = []corev1.Volume{v, v}
		}, wantErr{pod + ".volumes[1].name", field.ErrorTypeDuplicate, ""}},
		{"volume named like capn's", func(nc *capn.NestedCluster) {
			tpl(nc).Volumes = []corev1.Volume{{Name: PKIVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, wantErr{pod + ".volumes[0].name", field.ErrorTypeForbidden, "volume of capn's kube-apiserver pod"}},
		{"mount of a missing volume", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/x"}}
		}, wantErr{ctr0 + ".volumeMounts[0].name", field.ErrorTypeNotFound, ""}},
		{"probe without a handler", side(corev1.Container{Name: "side", Image: "example.com/side:1", ReadinessProbe: &corev1.Probe{PeriodSeconds: 5}}),
			wantErr{ctr1 + ".readinessProbe", field.ErrorTypeInvalid, "exactly one handler"}},
		{"handler beside capn's", func(nc *capn.NestedCluster) {
			tpl(nc).Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}, wantErr{ctr0 + ".livenessProbe", field.ErrorTypeForbidden, "probe handlers are capn's"}},
		{"init container named like the component", func(nc *capn.NestedCluster) {
			tpl(nc).InitContainers = []corev1.Container{{Name: "kube-apiserver", Image: "example.com/x:1"}}
		}, wantErr{pod + ".initContainers[0].name", field.ErrorTypeForbidden, "capn's kube-apiserver container"}},
		{"duplicate container names", side(corev1.Container{Name: "kube-apiserver", Image: "example.com/x:1"}),
			wantErr{ctr1 + ".name", field.ErrorTypeDuplicate, ""}},
		{"sidecar without an image", side(corev1.Container{Name: "side"}),
			wantErr{ctr1 + ".image", field.ErrorTypeRequired, ""}},
		{"unparsable component image", func(nc *capn.NestedCluster) { tpl(nc).Containers[0].Image = "Not An Image" },
			wantErr{ctr0 + ".image", field.ErrorTypeInvalid, "image reference"}},
	})
}

// What stays allowed: mounting the component's own volumes, timing-only
// probe changes on the component, a sidecar with its own probe.
func TestValidatePodTemplateShapeAllows(t *testing.T) {
	nc := validNC(t)
	spec := tpl(nc)
	spec.Containers[0].LivenessProbe = &corev1.Probe{PeriodSeconds: 20}
	spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	spec.Containers = append(spec.Containers, corev1.Container{
		Name: "side", Image: "example.com/side:1",
		VolumeMounts:   []corev1.VolumeMount{{Name: PKIVolume, MountPath: "/pki"}, {Name: "scratch", MountPath: "/scratch"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}},
	})
	expectNoErrors(t, ValidateNestedCluster(nc))
}

package validation

import (
	"fmt"
	"slices"
	"strings"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Volume names the builders render into component pods. A template may
// mount them (its containers see what the component sees, nothing more)
// but not define volumes of these names: the merge would fold a tenant's
// source into capn's.
const (
	PKIVolume    = "pki"
	ConfigVolume = "config"
)

// componentVolumes are the volumes each component's pod has.
var componentVolumes = map[string][]string{
	v1alpha1.ComponentAPIServer:         {PKIVolume, ConfigVolume},
	v1alpha1.ComponentControllerManager: {PKIVolume},
	v1alpha1.ComponentScheduler:         {PKIVolume, ConfigVolume},
}

// capnEnvPrefix marks the variables capn sets (profiles.EnvPodIP, ...):
// its flags expand them, so a tenant's value would redirect an owned flag
// such as --advertise-address.
const capnEnvPrefix = "CAPN_"

// validatePodTemplateShape checks what the allow-list walk cannot: that the
// template merged into component's pod still makes a well-formed pod whose
// capn-owned parts are capn's. Each rule closes a case the fuzz target
// FuzzPodTemplateMerge found (seeds under builders/testdata/fuzz).
func validatePodTemplateShape(tpl *corev1.PodTemplateSpec, component string, fldPath *field.Path) field.ErrorList {
	if tpl == nil {
		return nil
	}
	sp := fldPath.Child("spec")
	var allErrs field.ErrorList

	volumes := slices.Clone(componentVolumes[component])
	seen := map[string]bool{}
	for i, v := range tpl.Spec.Volumes {
		vp := sp.Child("volumes").Index(i)
		switch {
		case v.Name == "":
			allErrs = append(allErrs, field.Required(vp.Child("name"), ""))
		case slices.Contains(componentVolumes[component], v.Name):
			allErrs = append(allErrs, field.Forbidden(vp.Child("name"), fmt.Sprintf("%q is a volume of capn's %s pod; mount it instead", v.Name, component)))
		case seen[v.Name]:
			allErrs = append(allErrs, field.Duplicate(vp.Child("name"), v.Name))
		default:
			for _, msg := range utilvalidation.IsDNS1123Label(v.Name) {
				allErrs = append(allErrs, field.Invalid(vp.Child("name"), v.Name, msg))
			}
		}
		seen[v.Name] = true
		volumes = append(volumes, v.Name)
		if n := volumeSources(v); n != 1 {
			allErrs = append(allErrs, field.Invalid(vp, v.Name, fmt.Sprintf("must have exactly one source (emptyDir, downwardAPI, projected or image), has %d", n)))
		}
	}

	names := map[string]bool{}
	for _, cs := range []struct {
		name string
		list []corev1.Container
		init bool
	}{{"initContainers", tpl.Spec.InitContainers, true}, {"containers", tpl.Spec.Containers, false}} {
		for i := range cs.list {
			c := &cs.list[i]
			cp := sp.Child(cs.name).Index(i)
			main := c.Name == component && !cs.init
			switch {
			case c.Name == "":
			case cs.init && c.Name == component:
				allErrs = append(allErrs, field.Forbidden(cp.Child("name"), fmt.Sprintf("%q is capn's %s container", c.Name, component)))
			case names[c.Name]:
				allErrs = append(allErrs, field.Duplicate(cp.Child("name"), c.Name))
			default:
				for _, msg := range utilvalidation.IsDNS1123Label(c.Name) {
					allErrs = append(allErrs, field.Invalid(cp.Child("name"), c.Name, msg))
				}
			}
			names[c.Name] = true
			switch {
			case c.Image != "":
				allErrs = append(allErrs, validateImage(cp.Child("image"), c.Image)...)
			case !main:
				allErrs = append(allErrs, field.Required(cp.Child("image"), "a container capn does not render needs an image"))
			}
			for j, m := range c.VolumeMounts {
				if !slices.Contains(volumes, m.Name) {
					allErrs = append(allErrs, field.NotFound(cp.Child("volumeMounts").Index(j).Child("name"), m.Name))
				}
			}
			for _, pr := range []struct {
				name  string
				probe *corev1.Probe
			}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
				if pr.probe == nil {
					continue
				}
				n := probeHandlers(pr.probe.ProbeHandler)
				pp := cp.Child(pr.name)
				switch {
				case main && n > 0:
					// The merge would put a second handler next to capn's.
					allErrs = append(allErrs, field.Forbidden(pp, fmt.Sprintf("the %s container's probe handlers are capn's; only timing fields may change", component)))
				case !main && n != 1:
					allErrs = append(allErrs, field.Invalid(pp, n, "must have exactly one handler (exec, httpGet, tcpSocket or grpc)"))
				}
			}
		}
	}
	return allErrs
}

func volumeSources(v corev1.Volume) int {
	return countSet(v.EmptyDir != nil, v.DownwardAPI != nil, v.Projected != nil, v.Image != nil)
}

func probeHandlers(h corev1.ProbeHandler) int {
	return countSet(h.Exec != nil, h.HTTPGet != nil, h.TCPSocket != nil, h.GRPC != nil)
}

func countSet(set ...bool) int {
	n := 0
	for _, b := range set {
		if b {
			n++
		}
	}
	return n
}

// isCapnEnv reports whether name is one capn sets.
func isCapnEnv(name string) bool { return strings.HasPrefix(name, capnEnvPrefix) }

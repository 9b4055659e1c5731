package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DownwardAnnotationPrefix marks the host pod annotations that hold the
// tenant pod's labels and annotations for its downward-API volumes. The
// host pod's own labels are the syncer's (capn-owned keys, the tenant's
// under translated ones) and it carries none of the tenant's
// annotations, so a volume reading them on the host would show the
// syncer's view; it reads these annotations instead, which the syncer
// keeps equal to the tenant's metadata, and the kubelet rewrites the file
// when they change, as it does for the tenant's own edits.
const DownwardAnnotationPrefix = "downward.capn.dev/"

// MaxDownwardBytes bounds what the downward annotations of one host pod
// hold; the apiserver allows 256 KiB of annotations on an object.
const MaxDownwardBytes = 128 << 10

// Tenant metadata field paths a downward-API volume may read.
const (
	fieldLabels      = "metadata.labels"
	fieldAnnotations = "metadata.annotations"
)

// downwardAnnotation is the host annotation that holds the tenant pod's
// value of the downward-API field path, and whether path reads tenant
// metadata at all. A subscripted path gets a digest of itself: label and
// annotation keys may hold '/' and be longer than an annotation name.
func downwardAnnotation(path string) (string, bool) {
	switch base, _, sub := subscripted(path); {
	case !sub && (path == fieldLabels || path == fieldAnnotations):
		return DownwardAnnotationPrefix + strings.TrimPrefix(path, "metadata."), true
	case sub && (base == fieldLabels || base == fieldAnnotations):
		sum := sha256.Sum256([]byte(path))
		return DownwardAnnotationPrefix + "f-" + hex.EncodeToString(sum[:8]), true
	}
	return "", false
}

// subscripted splits "metadata.labels['key']" into its map and key.
func subscripted(path string) (base, key string, ok bool) {
	i := strings.Index(path, "[")
	if i < 0 || !strings.HasSuffix(path, "]") {
		return path, "", false
	}
	key = path[i+1 : len(path)-1]
	key = strings.Trim(key, `'"`)
	return path[:i], key, true
}

// downwardValue is the tenant pod's value of a tenant-metadata field path,
// written as the kubelet writes it: a whole map as sorted key="value"
// lines, a subscript as the bare value.
func downwardValue(path string, p *corev1.Pod) string {
	base, key, sub := subscripted(path)
	m := p.Labels
	if base == fieldAnnotations {
		m = p.Annotations
	}
	if sub {
		return m[key]
	}
	return formatMap(m)
}

// formatMap is k8s.io/kubernetes pkg/fieldpath.FormatMap: the kubelet's
// file format for a labels or annotations volume item.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// annotationPath is the field path of the host annotation a.
func annotationPath(a string) string { return "metadata.annotations['" + a + "']" }

// DownwardAnnotations are the host pod annotations of tenant: one for each
// field of its labels or annotations that its downward-API volumes or its
// containers' env read, with the tenant's current value. A pod's volumes
// and env cannot change, so the set of keys is fixed for its life; the
// values follow the tenant's edits.
func DownwardAnnotations(tenant *corev1.Pod) map[string]string {
	out := map[string]string{}
	read := func(f *corev1.ObjectFieldSelector) {
		if f == nil {
			return
		}
		if a, ok := downwardAnnotation(f.FieldPath); ok {
			out[a] = downwardValue(f.FieldPath, tenant)
		}
	}
	add := func(items []corev1.DownwardAPIVolumeFile) {
		for _, it := range items {
			read(it.FieldRef)
		}
	}
	for _, cs := range [][]corev1.Container{tenant.Spec.InitContainers, tenant.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if e.ValueFrom != nil {
					read(e.ValueFrom.FieldRef)
				}
			}
		}
	}
	for _, v := range tenant.Spec.Volumes {
		switch {
		case v.DownwardAPI != nil:
			add(v.DownwardAPI.Items)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.DownwardAPI != nil {
					add(s.DownwardAPI.Items)
				}
			}
		}
	}
	return out
}

// DownwardAnnotationsFit reports whether a holds at most MaxDownwardBytes:
// a tenant that grows its labels or annotations past the bound keeps the
// values its pod already sees, rather than a host write that fails.
func DownwardAnnotationsFit(a map[string]string) bool { return downwardBytes(a) <= MaxDownwardBytes }

// downwardBytes is the size the apiserver counts for annotations.
func downwardBytes(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

// WithDownwardAnnotations is cur's annotations with the downward ones
// replaced by want's: the rest (the tenant name, anything the host's
// controllers add) stays.
func WithDownwardAnnotations(cur, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range cur {
		if !strings.HasPrefix(k, DownwardAnnotationPrefix) {
			out[k] = v
		}
	}
	for k, v := range want {
		if strings.HasPrefix(k, DownwardAnnotationPrefix) {
			out[k] = v
		}
	}
	return out
}

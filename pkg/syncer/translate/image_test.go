package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestImageRegistry(t *testing.T) {
	for image, want := range map[string]string{
		"nginx":                             "",
		"nginx:1.27":                        "",
		"library/nginx":                     "",
		"team/app@sha256:abc":               "",
		"registry.example/app:v1":           "registry.example",
		"registry.example:5000/app":         "registry.example:5000",
		"localhost/app":                     "localhost",
		"LOCALHOST/app":                     "LOCALHOST",
		"localhost:5000/app":                "localhost:5000",
		"127.0.0.1:5000/app":                "127.0.0.1:5000",
		"[::1]:5000/app":                    "[::1]:5000",
		"[fe80::1%25eth0]/app":              "[fe80::1%25eth0]",
		"Evil/app":                          "Evil",
		"app:v1@sha256:abc":                 "",
		"registry.example/team/app/sub:tag": "registry.example",
	} {
		t.Run(image, func(t *testing.T) {
			got, ok := imageRegistry(image)
			assert.Equal(t, want, got)
			assert.Equal(t, want != "", ok)
		})
	}
}

func TestNodeLocalRegistry(t *testing.T) {
	for registry, refused := range map[string]bool{
		"registry.example":           false,
		"registry.example:5000":      false,
		"10.0.0.1:5000":              false, // a private registry on the provider's network is the provider's to firewall
		"203.0.113.7":                false,
		"[2001:db8::1]:5000":         false,
		"registry.localhost.example": false,
		"localhost":                  true,
		"localhost:5000":             true,
		"LocalHost:5000":             true,
		"localhost.":                 true,
		"evil.localhost":             true,
		"evil.LOCALHOST:443":         true,
		"127.0.0.1":                  true,
		"127.0.0.1:5000":             true,
		"127.8.9.10:80":              true,
		"0.0.0.0:5000":               true,
		"169.254.169.254":            true,
		"169.254.169.254:80":         true,
		"224.0.0.1":                  true,
		"255.255.255.255":            true,
		"[::1]":                      true,
		"[::1]:5000":                 true,
		"::1":                        true,
		"[::]:5000":                  true,
		"[fe80::1]:5000":             true,
		"[fe80::1%eth0]:5000":        true,
		"[::ffff:127.0.0.1]:5000":    true,
		"[ff02::1]":                  true,
		"127.1:5000":                 true,
		"0x7f.1":                     true,
		"2130706433:5000":            true,
		"0177.0.0.1":                 true,
	} {
		t.Run(registry, func(t *testing.T) {
			assert.Equal(t, refused, nodeLocalRegistry(registry) != "")
		})
	}
}

func TestPodRefusesNodeLocalImages(t *testing.T) {
	res, errs := Pod(podOn(func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:v1"}, {Name: "probe", Image: "169.254.169.254/latest/meta-data"}}
		p.Spec.Containers = []corev1.Container{{Name: "web", Image: "localhost:5000/web"}, {Name: "ok", Image: "nginx:1.27"}, {Name: "v6", Image: "[::1]:5000/x"}}
	}), goldenContext())
	assert.Nil(t, res)
	assert.Equal(t, []string{
		`spec.initContainers[1].image: Invalid value: "169.254.169.254/latest/meta-data": the image's registry 169.254.169.254 may not be a node-local address: a link-local address reaches the node's link and its metadata services`,
		`spec.containers[0].image: Invalid value: "localhost:5000/web": the image's registry localhost:5000 may not be a node-local address: localhost names the node itself`,
		`spec.containers[2].image: Invalid value: "[::1]:5000/x": the image's registry [::1]:5000 may not be a node-local address: a loopback address is the node itself`,
	}, errorStrings(errs))
}

package validation

import (
	"strings"
	"testing"
)

func TestIsImageReference(t *testing.T) {
	sha256 := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	good := []string{
		"nginx",
		"nginx:1.25",
		"library/busybox:latest",
		"registry.k8s.io/kube-apiserver:v1.37.2",
		"registry.k8s.io/etcd:3.6.4-0",
		"localhost/img",
		"localhost:5000/team/app:dev_1.2",
		"my-registry.example.com:443/a/b/c:TAG",
		"Registry.Example.com/app", // the domain is case-insensitive, the path is not
		"[2001:db8::1]:5000/app:v1",
		"10.0.0.1:5000/app",
		"a__b/c.d/e-f/g--h",
		"app@" + sha256,
		"app:v1@" + sha256,
		"app@sha512:" + strings.Repeat("ab", 64),
		"app:" + strings.Repeat("t", 128),
	}
	bad := []string{
		"",
		"Nginx",
		"team/App",
		"nginx:",
		":tag",
		"nginx:-tag",
		"nginx:tag with space",
		"app:" + strings.Repeat("t", 129),
		"app@sha256:abc",
		"app@md5:" + strings.Repeat("a", 32),
		"app@" + strings.ToUpper(sha256),
		"/nginx",
		"nginx/",
		"a//b",
		"a..b",
		"a-",
		"_a",
		"https://registry.example.com/app",
		"registry.example.com:port/app",
		strings.Repeat("a", 256),
	}
	for _, s := range good {
		if errs := IsImageReference(s); len(errs) > 0 {
			t.Errorf("IsImageReference(%q) = %v, want valid", s, errs)
		}
	}
	for _, s := range bad {
		if errs := IsImageReference(s); len(errs) == 0 {
			t.Errorf("IsImageReference(%q) accepted, want invalid", s)
		}
	}
}

package nestedcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

// recordingIssuer stands in for the provisioner's CA: the registry's job is
// who may ask and for how long, which is what these tests check.
type recordingIssuer struct {
	calls []string
	err   error
}

func (r *recordingIssuer) Issue(_ context.Context, nc *capn.NestedCluster, u string, ttl time.Duration) ([]byte, time.Time, error) {
	r.calls = append(r.calls, fmt.Sprintf("%s/%s %s %s", nc.Namespace, nc.Name, u, ttl))
	if r.err != nil {
		return nil, time.Time{}, r.err
	}
	return []byte("kubeconfig for " + u), time.Unix(1e9, 0).Add(ttl), nil
}

func TestKubeconfigSubresource(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "v1.37.2")
	issuer := &recordingIssuer{}
	r := nestedcluster.NewKubeconfigREST(e.s, issuer, 2*time.Hour)
	alice := genericapirequest.WithUser(e.ctx, &user.DefaultInfo{Name: "alice", Groups: []string{"team-a"}})
	post := func(ctx context.Context, name string, req *capn.NestedClusterKubeconfigRequest, opts *metav1.CreateOptions) (*capn.NestedClusterKubeconfigRequest, error) {
		if opts == nil {
			opts = &metav1.CreateOptions{}
		}
		out, err := r.Create(ctx, name, req, nil, opts)
		if err != nil {
			return nil, err
		}
		return out.(*capn.NestedClusterKubeconfigRequest), nil
	}

	out, err := post(alice, "tenant-a", &capn.NestedClusterKubeconfigRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status.Kubeconfig != "kubeconfig for alice" || *out.Spec.ExpirationSeconds != 3600 ||
		!out.Status.ExpirationTimestamp.Equal(&metav1.Time{Time: time.Unix(1e9, 0).Add(time.Hour)}) {
		t.Errorf("answer %+v", out)
	}
	if want := e.ns + "/tenant-a alice 1h0m0s"; len(issuer.calls) != 1 || issuer.calls[0] != want {
		t.Fatalf("issuer calls %v, want [%s]", issuer.calls, want)
	}
	req := &capn.NestedClusterKubeconfigRequest{}
	req.Spec.ExpirationSeconds = ptr.To[int64](7200)
	if _, err := post(alice, "tenant-a", req, nil); err != nil || issuer.calls[1] != e.ns+"/tenant-a alice 2h0m0s" {
		t.Errorf("2h request: %v, calls %v", err, issuer.calls)
	}

	refused := []struct {
		name   string
		ctx    context.Context
		target string
		req    *capn.NestedClusterKubeconfigRequest
		check  func(error) bool
		want   string
	}{
		{"over the maximum", alice, "tenant-a", withSeconds(7201), apierrors.IsInvalid, "spec.expirationSeconds: Invalid value: 7201: must be at most 7200"},
		{"under the minimum", alice, "tenant-a", withSeconds(60), apierrors.IsInvalid, "spec.expirationSeconds: Invalid value: 60"},
		{"anonymous", genericapirequest.WithUser(e.ctx, &user.DefaultInfo{Name: user.Anonymous}), "tenant-a", &capn.NestedClusterKubeconfigRequest{}, apierrors.IsForbidden, "authenticated user only"},
		{"no user", genericapirequest.WithNamespace(genericapirequest.NewContext(), e.ns), "tenant-a", &capn.NestedClusterKubeconfigRequest{}, apierrors.IsForbidden, "authenticated user only"},
		{"missing cluster", alice, "nope", &capn.NestedClusterKubeconfigRequest{}, apierrors.IsNotFound, `nestedclusters.capn.dev "nope" not found`},
		{"name mismatch", alice, "tenant-a", &capn.NestedClusterKubeconfigRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, apierrors.IsBadRequest, "does not match"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before := len(issuer.calls)
			_, err := post(tc.ctx, tc.target, tc.req, nil)
			if !tc.check(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if len(issuer.calls) != before {
				t.Errorf("a refused request reached the issuer: %v", issuer.calls[before:])
			}
		})
	}

	t.Run("dry run signs nothing", func(t *testing.T) {
		before := len(issuer.calls)
		out, err := post(alice, "tenant-a", &capn.NestedClusterKubeconfigRequest{}, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || out.Status.Kubeconfig != "" || len(issuer.calls) != before {
			t.Errorf("dry run: %v, kubeconfig %q, issuer calls %v", err, out.Status.Kubeconfig, issuer.calls[before:])
		}
	})
	t.Run("not provisioned yet", func(t *testing.T) {
		issuer.err = fmt.Errorf("%w: no cluster CA", nestedcluster.ErrNotProvisioned)
		defer func() { issuer.err = nil }()
		_, err := post(alice, "tenant-a", &capn.NestedClusterKubeconfigRequest{}, nil)
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "retry once it is Ready") {
			t.Errorf("got %v, want a 409 saying to retry when Ready", err)
		}
	})
}

func withSeconds(s int64) *capn.NestedClusterKubeconfigRequest {
	req := &capn.NestedClusterKubeconfigRequest{}
	req.Spec.ExpirationSeconds = &s
	return req
}

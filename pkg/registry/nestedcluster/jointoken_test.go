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

// recordingJoinIssuer stands in for the provisioner's side, which talks to
// the tenant: the registry's job is who may ask and for how long.
type recordingJoinIssuer struct {
	calls []string
	err   error
}

func (r *recordingJoinIssuer) IssueJoinToken(_ context.Context, nc *capn.NestedCluster, u string, ttl time.Duration) (*nestedcluster.JoinToken, error) {
	r.calls = append(r.calls, fmt.Sprintf("%s/%s %s %s", nc.Namespace, nc.Name, u, ttl))
	if r.err != nil {
		return nil, r.err
	}
	return &nestedcluster.JoinToken{Endpoint: "https://10.0.0.1:443", CACertHashes: []string{"sha256:ab"},
		Token: "abcdef.0123456789abcdef", Expires: time.Unix(1e9, 0).Add(ttl), BootstrapKubeconfig: []byte("bootstrap for " + u)}, nil
}

func TestJoinTokenSubresource(t *testing.T) {
	e := newEnv(t)
	e.create("tenant-a", "v1.37.2")
	issuer := &recordingJoinIssuer{}
	r := nestedcluster.NewJoinTokenREST(e.s, issuer, time.Hour)
	alice := genericapirequest.WithUser(e.ctx, &user.DefaultInfo{Name: "alice", Groups: []string{"team-a"}})
	post := func(ctx context.Context, name string, req *capn.NestedClusterJoinTokenRequest, opts *metav1.CreateOptions) (*capn.NestedClusterJoinTokenRequest, error) {
		if opts == nil {
			opts = &metav1.CreateOptions{}
		}
		out, err := r.Create(ctx, name, req, nil, opts)
		if err != nil {
			return nil, err
		}
		return out.(*capn.NestedClusterJoinTokenRequest), nil
	}

	out, err := post(alice, "tenant-a", &capn.NestedClusterJoinTokenRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := capn.NestedClusterJoinTokenRequestStatus{Endpoint: "https://10.0.0.1:443", CACertHashes: []string{"sha256:ab"},
		Token: "abcdef.0123456789abcdef", ExpirationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(15 * time.Minute)), BootstrapKubeconfig: "bootstrap for alice"}
	if *out.Spec.ExpirationSeconds != 900 || out.Name != "tenant-a" || out.Namespace != e.ns ||
		out.Status.Endpoint != want.Endpoint || out.Status.Token != want.Token || out.Status.BootstrapKubeconfig != want.BootstrapKubeconfig ||
		len(out.Status.CACertHashes) != 1 || !out.Status.ExpirationTimestamp.Equal(&want.ExpirationTimestamp) {
		t.Errorf("answer %+v", out)
	}
	if want := e.ns + "/tenant-a alice 15m0s"; len(issuer.calls) != 1 || issuer.calls[0] != want {
		t.Fatalf("issuer calls %v, want [%s]", issuer.calls, want)
	}
	if _, err := post(alice, "tenant-a", &capn.NestedClusterJoinTokenRequest{Spec: capn.NestedClusterJoinTokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}}, nil); err != nil ||
		issuer.calls[1] != e.ns+"/tenant-a alice 1m0s" {
		t.Errorf("60 s request: %v, calls %v", err, issuer.calls)
	}

	refused := []struct {
		name   string
		ctx    context.Context
		target string
		req    *capn.NestedClusterJoinTokenRequest
		check  func(error) bool
		want   string
	}{
		{"over the maximum", alice, "tenant-a", joinWithSeconds(3601), apierrors.IsInvalid, "spec.expirationSeconds: Invalid value: 3601: must be at most 3600"},
		{"under the minimum", alice, "tenant-a", joinWithSeconds(59), apierrors.IsInvalid, "spec.expirationSeconds: Invalid value: 59"},
		{"status set", alice, "tenant-a", &capn.NestedClusterJoinTokenRequest{Status: capn.NestedClusterJoinTokenRequestStatus{Token: "abcdef.0123456789abcdef"}}, apierrors.IsInvalid, "status: Forbidden"},
		{"anonymous", genericapirequest.WithUser(e.ctx, &user.DefaultInfo{Name: user.Anonymous}), "tenant-a", &capn.NestedClusterJoinTokenRequest{}, apierrors.IsForbidden, "authenticated user only"},
		{"no user", genericapirequest.WithNamespace(genericapirequest.NewContext(), e.ns), "tenant-a", &capn.NestedClusterJoinTokenRequest{}, apierrors.IsForbidden, "authenticated user only"},
		{"missing cluster", alice, "nope", &capn.NestedClusterJoinTokenRequest{}, apierrors.IsNotFound, `nestedclusters.capn.dev "nope" not found`},
		{"name mismatch", alice, "tenant-a", &capn.NestedClusterJoinTokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, apierrors.IsBadRequest, "does not match"},
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

	t.Run("dry run creates nothing", func(t *testing.T) {
		before := len(issuer.calls)
		out, err := post(alice, "tenant-a", &capn.NestedClusterJoinTokenRequest{}, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || out.Status.Token != "" || len(issuer.calls) != before {
			t.Errorf("dry run: %v, token %q, issuer calls %v", err, out.Status.Token, issuer.calls[before:])
		}
	})
	for _, tc := range []struct {
		name  string
		err   error
		check func(error) bool
		want  string
	}{
		{"not provisioned yet", fmt.Errorf("%w: no cluster CA", nestedcluster.ErrNotProvisioned), apierrors.IsConflict, "retry once it is Ready"},
		{"apiserver too old", nestedcluster.ErrJoinUnsupported, apierrors.IsConflict, "does not accept bootstrap tokens yet: it gains them the next time its pods roll"},
		{"tenant down", fmt.Errorf("%w: the tenant apiserver answered HTTP 500", nestedcluster.ErrTenantUnavailable), apierrors.IsServiceUnavailable, "answered HTTP 500"},
		{"other", fmt.Errorf("boom"), apierrors.IsInternalError, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			issuer.err = tc.err
			defer func() { issuer.err = nil }()
			_, err := post(alice, "tenant-a", &capn.NestedClusterJoinTokenRequest{}, nil)
			if !tc.check(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func joinWithSeconds(s int64) *capn.NestedClusterJoinTokenRequest {
	req := &capn.NestedClusterJoinTokenRequest{}
	req.Spec.ExpirationSeconds = &s
	return req
}

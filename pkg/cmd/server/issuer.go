package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

// kubeconfigIssuer adapts access.Issuer to the registry's interface. The
// two packages do not import each other (registry and provisioner both
// depend only on the API); this is where their errors meet.
type kubeconfigIssuer struct{ issuer *access.Issuer }

var _ nestedcluster.KubeconfigIssuer = kubeconfigIssuer{}

func (k kubeconfigIssuer) Issue(ctx context.Context, nc *capn.NestedCluster, user string, ttl time.Duration) ([]byte, time.Time, error) {
	// The provisioner takes the served version; the registry's object is
	// already defaulted, so conversion is all it needs.
	served := &v1alpha1.NestedCluster{}
	if err := v1alpha1.Convert_capn_NestedCluster_To_v1alpha1_NestedCluster(nc, served, nil); err != nil {
		return nil, time.Time{}, fmt.Errorf("converting %s/%s: %w", nc.Namespace, nc.Name, err)
	}
	data, expires, err := k.issuer.Issue(ctx, served, user, ttl)
	switch {
	case errors.Is(err, access.ErrNotProvisioned):
		// "<ErrNotProvisioned>: no cluster CA", as the registry's error.
		return nil, time.Time{}, fmt.Errorf("%w%s", nestedcluster.ErrNotProvisioned, strings.TrimPrefix(err.Error(), access.ErrNotProvisioned.Error()))
	case errors.Is(err, provisioner.ErrNotOwned):
		// The namespace this cluster would use belongs to another one: to
		// the requester it is simply not provisioned, and the other
		// cluster's names stay out of the answer.
		return nil, time.Time{}, nestedcluster.ErrNotProvisioned
	}
	return data, expires, err
}

// joinTokenIssuer adapts access.JoinIssuer to the registry's interface.
type joinTokenIssuer struct{ issuer *access.JoinIssuer }

var _ nestedcluster.JoinTokenIssuer = joinTokenIssuer{}

func (j joinTokenIssuer) IssueJoinToken(ctx context.Context, nc *capn.NestedCluster, requester string, ttl time.Duration) (*nestedcluster.JoinToken, error) {
	served := &v1alpha1.NestedCluster{}
	if err := v1alpha1.Convert_capn_NestedCluster_To_v1alpha1_NestedCluster(nc, served, nil); err != nil {
		return nil, fmt.Errorf("converting %s/%s: %w", nc.Namespace, nc.Name, err)
	}
	tok, err := j.issuer.Issue(ctx, served, requester, ttl)
	switch {
	case errors.Is(err, access.ErrNotProvisioned):
		return nil, fmt.Errorf("%w%s", nestedcluster.ErrNotProvisioned, strings.TrimPrefix(err.Error(), access.ErrNotProvisioned.Error()))
	case errors.Is(err, provisioner.ErrNotOwned):
		return nil, nestedcluster.ErrNotProvisioned
	case errors.Is(err, access.ErrJoinUnsupported):
		return nil, nestedcluster.ErrJoinUnsupported
	case errors.Is(err, access.ErrTenantUnavailable):
		// "<ErrTenantUnavailable>: <fixed description>", as the registry's.
		return nil, fmt.Errorf("%w%s", nestedcluster.ErrTenantUnavailable, strings.TrimPrefix(err.Error(), access.ErrTenantUnavailable.Error()))
	case err != nil:
		return nil, err
	}
	return &nestedcluster.JoinToken{Endpoint: tok.Endpoint, CACertHashes: tok.CACertHashes, Token: tok.Token,
		Expires: tok.Expires, BootstrapKubeconfig: tok.BootstrapKubeconfig}, nil
}

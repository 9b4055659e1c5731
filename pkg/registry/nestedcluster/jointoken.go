package nestedcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apis/capn/validation"
)

// ErrJoinUnsupported is what a JoinTokenIssuer returns for a tenant whose
// apiserver does not accept bootstrap tokens yet (its pods were rendered
// before capn enabled them, see builders.JoinTemplateRevision).
var ErrJoinUnsupported = errors.New("the tenant apiserver does not accept bootstrap tokens yet")

// ErrTenantUnavailable wraps a failed request to the tenant apiserver. Its
// text is capn's fixed description, never the tenant's answer.
var ErrTenantUnavailable = errors.New("the tenant apiserver could not be reached")

// JoinToken is what a JoinTokenIssuer hands out.
type JoinToken struct {
	Endpoint            string
	CACertHashes        []string
	Token               string
	Expires             time.Time
	BootstrapKubeconfig []byte
}

// JoinTokenIssuer creates bootstrap tokens inside tenants. It lives with
// the provisioner, which holds the tenant CA; the registry only decides
// who may ask and for how long.
type JoinTokenIssuer interface {
	// IssueJoinToken creates a bootstrap token in nc's tenant that
	// expires after ttl, recording requester as who asked.
	IssueJoinToken(ctx context.Context, nc *capn.NestedCluster, requester string, ttl time.Duration) (*JoinToken, error)
}

// JoinTokenREST serves POST nestedclusters/NAME/jointoken the way
// KubeconfigREST serves /kubeconfig: the answer is the request with its
// status filled in, and capn stores nothing (the token lives in the
// tenant).
type JoinTokenREST struct {
	store  *genericregistry.Store
	issuer JoinTokenIssuer
	max    time.Duration
}

// NewJoinTokenREST is installed only when a provisioner runs.
func NewJoinTokenREST(s Storage, issuer JoinTokenIssuer, maxTTL time.Duration) *JoinTokenREST {
	return &JoinTokenREST{store: s.NestedCluster.Store, issuer: issuer, max: maxTTL}
}

var _ rest.NamedCreater = &JoinTokenREST{}

func (r *JoinTokenREST) New() runtime.Object { return &capn.NestedClusterJoinTokenRequest{} }

// Destroy is a no-op: the store is shared with REST, which owns its lifetime.
func (r *JoinTokenREST) Destroy() {}

func (r *JoinTokenREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	const resource = "nestedclusters/jointoken"
	req, ok := obj.(*capn.NestedClusterJoinTokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a NestedClusterJoinTokenRequest, got %T", obj))
	}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q does not match the NestedCluster %q in the URL", req.Name, name))
	}
	if errs := validation.ValidateJoinTokenRequest(req, r.max); len(errs) > 0 {
		return nil, apierrors.NewInvalid(capn.Kind("NestedClusterJoinTokenRequest"), name, errs)
	}
	nc, requester, err := credentialTarget(ctx, r.store, resource, name, req, createValidation, "a join token")
	if err != nil {
		return nil, err
	}
	out := req.DeepCopy()
	out.Name, out.Namespace = nc.Name, nc.Namespace
	ttl := validation.JoinTokenTTL(req, r.max)
	out.Spec.ExpirationSeconds = ptr.To(int64(ttl / time.Second))
	if len(options.DryRun) > 0 {
		return out, nil // validated and authorized; nothing created in the tenant
	}
	// The token is a Secret in the tenant: a sleeping tenant has no
	// apiserver to hold it. One asleep for inactivity is asked to wake.
	if meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionSleeping) {
		if err := requestWake(ctx, r.store, nc, time.Now()); err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("asking %s/%s to wake: %w", nc.Namespace, name, err))
		}
		why := "spec.sleep.asleep is true: wake it first (kubectl nested wake " + name + ")"
		if meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionInactive) {
			why = "it slept for inactivity and is waking now: retry once it is Ready"
		}
		return nil, apierrors.NewConflict(capn.Resource(resource), name, fmt.Errorf("the NestedCluster is asleep; %s", why))
	}
	tok, err := r.issuer.IssueJoinToken(ctx, nc, requester.GetName(), ttl)
	switch {
	case errors.Is(err, ErrNotProvisioned):
		return nil, apierrors.NewConflict(capn.Resource(resource), name,
			fmt.Errorf("%w (phase %q); retry once it is Ready", err, nc.Status.Phase))
	case errors.Is(err, ErrJoinUnsupported):
		return nil, apierrors.NewConflict(capn.Resource(resource), name,
			fmt.Errorf("%w: it gains them the next time its pods roll (a version upgrade, a certificate renewal, or a change to its pod template such as spec.apiServer.extraArgs or a podTemplate annotation)", err))
	case errors.Is(err, ErrTenantUnavailable):
		// 503, like an aggregated API that is down: retry later.
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("creating a join token in %s/%s: %v", nc.Namespace, name, err))
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("creating a join token for %s/%s: %w", nc.Namespace, name, err))
	}
	out.Status = capn.NestedClusterJoinTokenRequestStatus{
		Endpoint:            tok.Endpoint,
		CACertHashes:        tok.CACertHashes,
		Token:               tok.Token,
		ExpirationTimestamp: metav1.NewTime(tok.Expires),
		BootstrapKubeconfig: string(tok.BootstrapKubeconfig),
	}
	return out, nil
}

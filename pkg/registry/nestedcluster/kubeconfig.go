package nestedcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/validation"
)

// DefaultKubeconfigExpiration applies when a request names no lifetime.
const DefaultKubeconfigExpiration = time.Hour

// ErrNotProvisioned is what a KubeconfigIssuer returns while the tenant's
// CA or apiserver Service does not exist yet.
var ErrNotProvisioned = errors.New("the control plane is not provisioned yet")

// KubeconfigIssuer signs tenant credentials. It lives with the provisioner,
// which owns the tenant CA; the registry only decides who may ask and for
// how long.
type KubeconfigIssuer interface {
	// Issue returns a kubeconfig for nc's apiserver authenticating user for
	// ttl, and when its certificate expires.
	Issue(ctx context.Context, nc *capn.NestedCluster, user string, ttl time.Duration) ([]byte, time.Time, error)
}

// KubeconfigREST serves POST nestedclusters/NAME/kubeconfig, like
// serviceaccounts/NAME/token: the answer is the request with its status
// filled in, and nothing is stored.
type KubeconfigREST struct {
	store  *genericregistry.Store
	issuer KubeconfigIssuer
	max    time.Duration
}

// NewKubeconfigREST is installed only when a provisioner runs: without one
// there is no tenant CA to sign with, and a 404 says so more plainly than
// an error from every request.
func NewKubeconfigREST(s Storage, issuer KubeconfigIssuer, maxExpiration time.Duration) *KubeconfigREST {
	return &KubeconfigREST{store: s.NestedCluster.Store, issuer: issuer, max: maxExpiration}
}

var _ rest.NamedCreater = &KubeconfigREST{}

func (r *KubeconfigREST) New() runtime.Object { return &capn.NestedClusterKubeconfigRequest{} }

// Destroy is a no-op: the store is shared with REST, which owns its lifetime.
func (r *KubeconfigREST) Destroy() {}

func (r *KubeconfigREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*capn.NestedClusterKubeconfigRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a NestedClusterKubeconfigRequest, got %T", obj))
	}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q does not match the NestedCluster %q in the URL", req.Name, name))
	}
	if errs := validation.ValidateKubeconfigRequest(req, r.max); len(errs) > 0 {
		return nil, apierrors.NewInvalid(capn.Kind("NestedClusterKubeconfigRequest"), name, errs)
	}
	nc, requester, err := credentialTarget(ctx, r.store, "nestedclusters/kubeconfig", name, req, createValidation, "a tenant kubeconfig")
	if err != nil {
		return nil, err
	}
	out := req.DeepCopy()
	out.Name, out.Namespace = nc.Name, nc.Namespace
	if len(options.DryRun) > 0 {
		return out, nil // validated and authorized; nothing signed
	}
	ttl := DefaultKubeconfigExpiration
	if s := req.Spec.ExpirationSeconds; s != nil {
		ttl = time.Duration(*s) * time.Second
	}
	out.Spec.ExpirationSeconds = ptr.To(int64(ttl / time.Second))
	data, expires, err := r.issuer.Issue(ctx, nc, requester.GetName(), ttl)
	switch {
	case errors.Is(err, ErrNotProvisioned):
		// 409 like other "not in this state" answers: retrying once the
		// NestedCluster is Ready succeeds.
		return nil, apierrors.NewConflict(capn.Resource("nestedclusters/kubeconfig"), name,
			fmt.Errorf("%w (phase %q); retry once it is Ready", err, nc.Status.Phase))
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("issuing a kubeconfig for %s/%s: %w", nc.Namespace, name, err))
	}
	out.Status.Kubeconfig = string(data)
	out.Status.ExpirationTimestamp = metav1.NewTime(expires)
	if err := requestWake(ctx, r.store, nc, time.Now()); err != nil {
		// The kubeconfig is good; the wake can be asked for again.
		return nil, apierrors.NewInternalError(fmt.Errorf("asking %s/%s to wake: %w", nc.Namespace, name, err))
	}
	return out, nil
}

// credentialTarget is what /kubeconfig and /jointoken check once the
// request itself is valid: the requester is an authenticated user (the
// credential is issued in their name), admission allows it, and the
// NestedCluster exists and is not being deleted.
func credentialTarget(ctx context.Context, store *genericregistry.Store, resource, name string, req runtime.Object,
	createValidation rest.ValidateObjectFunc, what string) (*capn.NestedCluster, user.Info, error) {
	requester, ok := genericapirequest.UserFrom(ctx)
	if !ok || requester.GetName() == "" || requester.GetName() == user.Anonymous {
		return nil, nil, apierrors.NewForbidden(capn.Resource(resource), name,
			errors.New(what+" is issued to an authenticated user only"))
	}
	if createValidation != nil {
		if err := createValidation(ctx, req); err != nil {
			return nil, nil, err
		}
	}
	got, err := store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	nc := got.(*capn.NestedCluster)
	if nc.DeletionTimestamp != nil {
		return nil, nil, apierrors.NewConflict(capn.Resource(resource), name, errors.New("the NestedCluster is being deleted"))
	}
	return nc, requester, nil
}

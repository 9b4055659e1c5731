package nestedetcdpool_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apiserver"
	"capn.dev/capn/pkg/etcd"
	"capn.dev/capn/pkg/registry/nestedetcdpool"
)

const unreadable = "someone-elses"

// newStorage is the real nestedetcdpools storage on an embedded etcd; its
// authorizer lets everyone read every Secret but unreadable.
func newStorage(t *testing.T) nestedetcdpool.Storage {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := etcd.Start(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop(); _ = os.RemoveAll(dir) })
	cfg := storagebackend.NewDefaultConfig("/registry-test", apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion))
	cfg.Transport.ServerList = []string{srv.ClientURL}
	opts := generic.RESTOptions{
		StorageConfig: cfg.ForResource(capn.Resource("nestedetcdpools")), Decorator: generic.UndecoratedStorage,
		DeleteCollectionWorkers: 1, ResourcePrefix: "capn.dev/nestedetcdpools",
	}
	s, err := nestedetcdpool.NewStorage(apiserver.Scheme, opts, authorizer.AuthorizerFunc(
		func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			if a.GetResource() == "secrets" && a.GetName() == unreadable {
				return authorizer.DecisionDeny, "", nil
			}
			return authorizer.DecisionAllow, "", nil
		}))
	require.NoError(t, err)
	t.Cleanup(s.Pool.Destroy)
	return s
}

func asProvider() context.Context {
	// Cluster-scoped requests carry the empty namespace, as the handler sets.
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "platform-admin"})
}

func pool(name string) *capn.NestedEtcdPool {
	return &capn.NestedEtcdPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: capn.NestedEtcdPoolSpec{
			Endpoints:            []string{"https://etcd-0.pool.example:2379", "https://10.0.0.5:2379"},
			CredentialsSecretRef: capn.NamespacedSecretReference{Namespace: "etcd-pools", Name: "shared-root"},
		},
	}
}

func fieldsOf(err error) []string {
	var out []string
	if se, ok := err.(apierrors.APIStatus); ok && se.Status().Details != nil {
		for _, c := range se.Status().Details.Causes {
			out = append(out, c.Field)
		}
	}
	return out
}

func TestPoolCreateValidatesAndStoresNothingPartial(t *testing.T) {
	s := newStorage(t)
	ctx := asProvider()
	for name, tc := range map[string]struct {
		mutate func(*capn.NestedEtcdPool)
		fields []string
		detail string
	}{
		"plain http":      {func(p *capn.NestedEtcdPool) { p.Spec.Endpoints[1] = "http://10.0.0.5:2379" }, []string{"spec.endpoints[1]"}, "must be https"},
		"no endpoints":    {func(p *capn.NestedEtcdPool) { p.Spec.Endpoints = nil }, []string{"spec.endpoints"}, "at least one"},
		"no namespace":    {func(p *capn.NestedEtcdPool) { p.Spec.CredentialsSecretRef.Namespace = "" }, []string{"spec.credentialsSecretRef.namespace"}, "Required"},
		"secret not mine": {func(p *capn.NestedEtcdPool) { p.Spec.CredentialsSecretRef.Name = unreadable }, []string{"spec.credentialsSecretRef"}, `lacks permission "get" on secrets "someone-elses" in namespace "etcd-pools"`},
		"too many endpoints": {func(p *capn.NestedEtcdPool) {
			for i := range 8 {
				p.Spec.Endpoints = append(p.Spec.Endpoints, "https://10.0.1."+string(rune('0'+i))+":2379")
			}
		}, []string{"spec.endpoints"}, "Too many"},
	} {
		t.Run(name, func(t *testing.T) {
			p := pool("bad")
			tc.mutate(p)
			_, err := s.Pool.Create(ctx, p, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
			assert.Equal(t, tc.fields, fieldsOf(err))
			assert.Contains(t, err.Error(), tc.detail)
			_, err = s.Pool.Get(ctx, "bad", &metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "nothing partial is written: %v", err)
		})
	}
}

// The provider owns spec, capn owns status: a write through one cannot
// change the other.
func TestPoolSpecAndStatusAreSeparate(t *testing.T) {
	s := newStorage(t)
	ctx := asProvider()
	obj, err := s.Pool.Create(ctx, pool("shared"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	require.NoError(t, err)
	created := obj.(*capn.NestedEtcdPool)
	assert.Equal(t, int64(1), created.Generation)

	st := created.DeepCopy()
	st.Status.Tenants, st.Status.DBSizeBytes = 2, 1<<20
	st.Spec.Endpoints = []string{"https://elsewhere:2379"}
	obj, _, err = s.Status.Update(ctx, "shared", rest.DefaultUpdatedObjectInfo(st), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	require.NoError(t, err)
	got := obj.(*capn.NestedEtcdPool)
	assert.Equal(t, int32(2), got.Status.Tenants)
	assert.Equal(t, created.Spec.Endpoints, got.Spec.Endpoints, "/status does not write spec")

	sp := got.DeepCopy()
	sp.Spec.Endpoints = []string{"https://etcd-9.pool.example:2379"}
	sp.Status.Tenants = 0
	obj, _, err = s.Pool.Update(ctx, "shared", rest.DefaultUpdatedObjectInfo(sp), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	require.NoError(t, err)
	got = obj.(*capn.NestedEtcdPool)
	assert.Equal(t, []string{"https://etcd-9.pool.example:2379"}, got.Spec.Endpoints)
	assert.Equal(t, int32(2), got.Status.Tenants, "the main resource does not write status")
	assert.Equal(t, int64(2), got.Generation, "a spec change bumps the generation")

	bad := got.DeepCopy()
	bad.Status.Tenants = -1
	_, _, err = s.Status.Update(ctx, "shared", rest.DefaultUpdatedObjectInfo(bad), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
}

package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	listers "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
)

// A pooled cluster's status is the tenant's to read; what is wrong with
// the provider's pool (its Secret, its members, etcd's answers) is not.
// That the pool does not exist is.
func TestPoolFailuresKeepTheProvidersDetails(t *testing.T) {
	for name, tc := range map[string]struct {
		pools []*v1alpha1.NestedEtcdPool
		want  string
	}{
		"pool without its Secret": {
			pools: []*v1alpha1.NestedEtcdPool{{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Spec: v1alpha1.NestedEtcdPoolSpec{
				Endpoints:            []string{"https://10.0.0.5:2379"},
				CredentialsSecretRef: v1alpha1.NamespacedSecretReference{Namespace: "providers-etcd", Name: "root-credentials"}}}},
			want: `NestedEtcdPool "shared" is not usable now`,
		},
		"no such pool": {want: `"shared" not found`},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Etcd = v1alpha1.EtcdSpec{Pool: "shared"} }))
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, p := range tc.pools {
				require.NoError(t, idx.Add(p))
			}
			f.c.pools.pools, f.c.pools.poolGrants = listers.NewNestedEtcdPoolLister(idx), map[types.UID]string{}
			_, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
			require.Error(t, err)
			f.refresh()
			c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionReconciled)
			require.NotNil(t, c)
			assert.Equal(t, v1alpha1.ReasonEtcdPoolFailed, c.Reason)
			assert.Contains(t, c.Message, tc.want)
			for _, secret := range []string{"providers-etcd", "root-credentials", "10.0.0.5"} {
				assert.NotContains(t, c.Message, secret)
			}
		})
	}
}

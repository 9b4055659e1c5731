package nestedclusterbackup_test

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
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apiserver"
	"capn.dev/capn/pkg/etcd"
	"capn.dev/capn/pkg/registry/nestedclusterbackup"
)

func newStorage(t *testing.T) nestedclusterbackup.Storage {
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
		StorageConfig: cfg.ForResource(capn.Resource("nestedclusterbackups")), Decorator: generic.UndecoratedStorage,
		DeleteCollectionWorkers: 1, ResourcePrefix: "capn.dev/nestedclusterbackups",
	}
	s, err := nestedclusterbackup.NewStorage(apiserver.Scheme, opts, []string{user.SystemPrivilegedGroup})
	require.NoError(t, err)
	t.Cleanup(s.Backup.Destroy)
	return s
}

func as(u user.Info) context.Context {
	return genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "team-a"), u)
}

var (
	tenant = &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	capnLo = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}
)

func backupOf(cluster string) *capn.NestedClusterBackup {
	return &capn.NestedClusterBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "team-a"}, Spec: capn.NestedClusterBackupSpec{ClusterName: cluster}}
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

func TestBackupCreateValidatesAndStoresNothingPartial(t *testing.T) {
	s := newStorage(t)
	for name, cluster := range map[string]string{"no cluster": "", "not a cluster name": "Not_A_Cluster"} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Backup.Create(as(tenant), backupOf(cluster), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
			assert.Equal(t, []string{"spec.clusterName"}, fieldsOf(err))
			_, err = s.Backup.Get(as(tenant), "b1", &metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "nothing partial is written: %v", err)
		})
	}
}

// The finalizer is set at create, so a backup's data is always cleaned up;
// only capn (or the provider's break-glass group) removes it. Spec is fixed;
// status is written through /status only, and a Completed backup stays so.
func TestBackupLifecycleRules(t *testing.T) {
	s := newStorage(t)
	in := backupOf("demo")
	in.Status.Phase = capn.BackupCompleted // ignored on create
	obj, err := s.Backup.Create(as(tenant), in, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	require.NoError(t, err)
	b := obj.(*capn.NestedClusterBackup)
	assert.Equal(t, []string{v1alpha1.BackupFinalizer}, b.Finalizers)
	assert.Empty(t, b.Status.Phase, "status is not the creator's")

	update := func(ctx context.Context, r rest.Updater, mutate func(*capn.NestedClusterBackup)) (*capn.NestedClusterBackup, error) {
		obj, err := s.Backup.Get(ctx, "b1", &metav1.GetOptions{})
		require.NoError(t, err)
		next := obj.(*capn.NestedClusterBackup).DeepCopy()
		mutate(next)
		out, _, err := r.Update(ctx, "b1", rest.DefaultUpdatedObjectInfo(next), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		return out.(*capn.NestedClusterBackup), nil
	}
	_, err = update(as(tenant), s.Backup, func(b *capn.NestedClusterBackup) { b.Spec.ClusterName = "other" })
	require.Error(t, err)
	assert.Equal(t, []string{"spec"}, fieldsOf(err))

	_, err = update(as(tenant), s.Backup, func(b *capn.NestedClusterBackup) { b.Finalizers = nil })
	require.Error(t, err)
	assert.Equal(t, []string{"metadata.finalizers"}, fieldsOf(err))

	got, err := update(as(capnLo), s.Status, func(b *capn.NestedClusterBackup) {
		b.Status = capn.NestedClusterBackupStatus{Phase: capn.BackupCompleted, Keys: 10, Revision: 7, SizeBytes: 100}
		b.Spec.ClusterName = "ignored"
	})
	require.NoError(t, err)
	assert.Equal(t, capn.BackupCompleted, got.Status.Phase)
	assert.Equal(t, "demo", got.Spec.ClusterName, "/status does not write spec")

	_, err = update(as(capnLo), s.Status, func(b *capn.NestedClusterBackup) { b.Status.Phase = capn.BackupPending })
	require.Error(t, err)
	assert.Equal(t, []string{"status.phase"}, fieldsOf(err))

	got, err = update(as(capnLo), s.Backup, func(b *capn.NestedClusterBackup) { b.Finalizers = nil })
	require.NoError(t, err, "capn removes its finalizer")
	assert.Empty(t, got.Finalizers)
}

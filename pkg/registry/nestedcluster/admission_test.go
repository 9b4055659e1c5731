package nestedcluster_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/rest"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

var (
	capnItself = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}
	provider   = &user.DefaultInfo{Name: "platform-admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
)

// updateAs sends an update of the main resource (or /status) as u.
func (e *env) updateAs(u user.Info, nc *capn.NestedCluster, status bool) error {
	store := rest.Updater(e.s.NestedCluster)
	if status {
		store = e.s.Status
	}
	_, _, err := store.Update(asUser(e.ctx, u), nc.Name, rest.DefaultUpdatedObjectInfo(nc),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return err
}

func withoutFinalizer(nc *capn.NestedCluster) *capn.NestedCluster {
	out := nc.DeepCopy()
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return f == v1alpha1.ProvisionerFinalizer })
	return out
}

// A tenant must not drop capn's finalizer (and then delete the object
// before capn re-adds it, orphaning a running control plane); capn and the
// provider's break-glass groups may.
func TestFinalizerRemovalIsCapnsOrTheProviders(t *testing.T) {
	e := newEnv(t)
	nc := e.create("guarded", "")
	nc.Finalizers = []string{v1alpha1.ProvisionerFinalizer, "example.com/other"}
	require.NoError(t, e.updateAs(capnItself, nc, false))
	nc = e.get("guarded")

	for _, status := range []bool{false, true} {
		err := e.updateAs(tenant, withoutFinalizer(nc), status)
		require.Error(t, err, "status=%v", status)
		assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
		assert.Equal(t, []string{"metadata.finalizers"}, causeFields(err))
		assert.Contains(t, err.Error(), "only capn and the provider's break-glass groups may remove it")
	}
	require.Contains(t, e.get("guarded").Finalizers, v1alpha1.ProvisionerFinalizer, "nothing partial is written")

	// capn's name without capn's group is not capn.
	impostor := &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.AllAuthenticated}}
	assert.True(t, apierrors.IsInvalid(e.updateAs(impostor, withoutFinalizer(nc), false)))

	// Other finalizers stay the tenant's to manage.
	other := e.get("guarded")
	other.Finalizers = []string{v1alpha1.ProvisionerFinalizer}
	require.NoError(t, e.updateAs(tenant, other, false))

	require.NoError(t, e.updateAs(provider, withoutFinalizer(e.get("guarded")), false))
	assert.NotContains(t, e.get("guarded").Finalizers, v1alpha1.ProvisionerFinalizer)

	e.create("capn-removes", "", func(nc *capn.NestedCluster) { nc.Finalizers = []string{v1alpha1.ProvisionerFinalizer} })
	require.NoError(t, e.updateAs(capnItself, withoutFinalizer(e.get("capn-removes")), false))
}

func externalEtcd(ca, client string) func(*capn.NestedCluster) {
	return func(nc *capn.NestedCluster) {
		nc.Spec.Etcd = capn.EtcdSpec{External: &capn.ExternalEtcd{
			Endpoints:       []string{"https://etcd.example:2379"},
			Prefix:          "/tenant",
			CASecretRef:     capn.SecretReference{Name: ca},
			ClientSecretRef: capn.SecretReference{Name: client},
		}}
	}
}

// Naming a Secret the requester cannot read would mount it into a pod whose
// image the tenant picks: the reference needs "get" on the Secret.
func TestSecretReferencesNeedGetPermission(t *testing.T) {
	e := newEnv(t)
	nc := newCluster(t, e.ns, "exfiltrate", "")
	externalEtcd("etcd-ca", unreadableSecret)(nc)
	_, err := e.s.NestedCluster.Create(e.ctx, nc, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
	assert.Equal(t, []string{"spec.etcd.external.clientSecretRef.name"}, causeFields(err))
	assert.Contains(t, err.Error(), `user "tenant-user" lacks permission "get" on secrets "not-yours" in namespace "`+e.ns+`"`)
	_, err = e.s.NestedCluster.Get(e.ctx, "exfiltrate", &metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing partial is written: %v", err)

	ok := e.create("readable", "", externalEtcd("etcd-ca", "etcd-client"))

	changed := ok.DeepCopy()
	changed.Spec.Etcd.External.CASecretRef.Name = unreadableSecret
	err = e.updateAs(tenant, changed, false)
	require.Error(t, err)
	assert.Equal(t, []string{"spec.etcd.external.caSecretRef.name"}, causeFields(err))
}

// The check runs only for references that are set or changed: an object
// whose Secret the requester can no longer read still takes other edits,
// e.g. from a teammate with less access, or capn removing its finalizer.
func TestSecretReferencesUnchangedAreNotRechecked(t *testing.T) {
	e := newEnv(t)
	nc := newCluster(t, e.ns, "stored", "")
	externalEtcd("etcd-ca", unreadableSecret)(nc)
	nc.Finalizers = []string{v1alpha1.ProvisionerFinalizer}
	_, err := e.s.NestedCluster.Create(asUser(e.ctx, provider), nc, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	require.NoError(t, err, "the provider may reference a Secret only it can read")
	stored := e.get("stored")
	require.Equal(t, unreadableSecret, stored.Spec.Etcd.External.ClientSecretRef.Name)

	edit := stored.DeepCopy()
	edit.Labels = map[string]string{"team": "a"}
	require.NoError(t, e.updateAs(tenant, edit, false))
	require.NoError(t, e.updateAs(capnItself, withoutFinalizer(e.get("stored")), false))
}

// A pool is the provider's to hand out: naming one needs the verb "use" on
// it, checked at create (the field is immutable), refused on the field
// with nothing stored.
func TestPoolNeedsUse(t *testing.T) {
	e := newEnv(t)
	pooled := func(pool string) func(*capn.NestedCluster) {
		return func(nc *capn.NestedCluster) { nc.Spec.Etcd = capn.EtcdSpec{Pool: pool} }
	}
	nc := newCluster(t, e.ns, "squatter", "")
	pooled(forbiddenPool)(nc)
	_, err := e.s.NestedCluster.Create(e.ctx, nc, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
	assert.Equal(t, []string{"spec.etcd.pool"}, causeFields(err))
	assert.Contains(t, err.Error(), `user "tenant-user" lacks permission "use" on nestedetcdpools.capn.dev "providers-only"`)
	_, err = e.s.NestedCluster.Get(e.ctx, "squatter", &metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing partial is written: %v", err)

	ok := e.create("granted", "", pooled("shared"))
	assert.Equal(t, "shared", ok.Spec.Etcd.Pool)
	assert.Nil(t, ok.Spec.Etcd.Managed, "no managed etcd is defaulted beside a pool")
	// Later edits by someone who may not use the pool are not rechecked.
	edit := ok.DeepCopy()
	edit.Labels = map[string]string{"team": "a"}
	require.NoError(t, e.updateAs(tenant, edit, false))
}

// A restore reads a backup of another cluster into one the requester runs:
// it needs the verb "restore" on the backup, and a Completed backup,
// checked at create and refused on the field with nothing stored; the
// field cannot change afterwards.
func TestRestoreFromNeedsACompletedBackupTheUserMayRestore(t *testing.T) {
	e := newEnv(t)
	from := func(backup string) func(*capn.NestedCluster) {
		return func(nc *capn.NestedCluster) { nc.Spec.RestoreFrom = &capn.RestoreSource{Backup: backup} }
	}
	for name, tc := range map[string]struct {
		backup, detail string
	}{
		"not restorable by this user": {unrestorableBackup, `user "tenant-user" lacks permission "restore" on nestedclusterbackups.capn.dev "someone-elses-backup"`},
		"missing":                     {"nope", `spec.restoreFrom.backup: Not found: "nope"`},
		"pending":                     {"pending", "the backup is Pending, not Completed"},
		"failed":                      {"failed", "the backup is Failed, not Completed"},
		"not a name":                  {"Not_A_Name", "spec.restoreFrom.backup: Invalid value"},
	} {
		t.Run(name, func(t *testing.T) {
			nc := newCluster(t, e.ns, "restored", "")
			from(tc.backup)(nc)
			_, err := e.s.NestedCluster.Create(e.ctx, nc, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want 422, got %v", err)
			assert.Equal(t, []string{"spec.restoreFrom.backup"}, causeFields(err))
			assert.Contains(t, err.Error(), tc.detail)
			_, err = e.s.NestedCluster.Get(e.ctx, "restored", &metav1.GetOptions{})
			require.True(t, apierrors.IsNotFound(err), "nothing partial is written: %v", err)
		})
	}
	ok := e.create("restored", "", from("completed"))
	assert.Equal(t, "completed", ok.Spec.RestoreFrom.Backup)
	edit := ok.DeepCopy()
	edit.Spec.RestoreFrom = &capn.RestoreSource{Backup: "pending"}
	err := e.updateAs(tenant, edit, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.restoreFrom: Invalid value")
	assert.Contains(t, err.Error(), "field is immutable")
}

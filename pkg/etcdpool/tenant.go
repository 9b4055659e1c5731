// Package etcdpool gives a tenant its own place in an etcd shared by many
// (a NestedEtcdPool): an etcd user that authenticates by the common name of
// its client certificate, and a role with readwrite on exactly the tenant's
// key prefix. It talks to etcd with the v3 client and nothing else; the
// provisioner decides when (controller/etcdpool.go).
package etcdpool

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/types"
)

// Tenant is one tenant's identity and keys in a pool.
type Tenant struct {
	// User is the etcd user, and the CN of the tenant apiserver's client
	// certificate: etcd maps a verified certificate's CN to the user.
	User string
	// Role grants readwrite on [Prefix, the prefix's range end).
	Role string
	// Prefix is "/<uid>/": the apiserver's --etcd-prefix. The trailing
	// slash keeps "/a" from covering "/ab".
	Prefix string
}

// For is the tenant of the NestedCluster with uid. By UID, never by name:
// a cluster deleted and created again under the same name is another
// tenant, with other keys.
func For(uid types.UID) Tenant {
	id := string(uid)
	return Tenant{User: "capn-tenant-" + id, Role: "capn-tenant-" + id, Prefix: "/" + id + "/"}
}

// Grant makes t's user (no password: certificate only) and role, gives the
// role readwrite on t's prefix and nothing else, and binds them. It is
// idempotent, so a failed attempt is simply run again.
func Grant(ctx context.Context, auth clientv3.Auth, t Tenant) error {
	if _, err := auth.UserAddWithOptions(ctx, t.User, "", &clientv3.UserAddOptions{NoPassword: true}); err != nil && !errors.Is(err, rpctypes.ErrUserAlreadyExist) {
		return fmt.Errorf("adding etcd user %s: %w", t.User, err)
	}
	if _, err := auth.RoleAdd(ctx, t.Role); err != nil && !errors.Is(err, rpctypes.ErrRoleAlreadyExist) {
		return fmt.Errorf("adding etcd role %s: %w", t.Role, err)
	}
	if _, err := auth.RoleGrantPermission(ctx, t.Role, t.Prefix, clientv3.GetPrefixRangeEnd(t.Prefix),
		clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
		return fmt.Errorf("granting %s readwrite on %s: %w", t.Role, t.Prefix, err)
	}
	if _, err := auth.UserGrantRole(ctx, t.User, t.Role); err != nil {
		return fmt.Errorf("granting role %s to %s: %w", t.Role, t.User, err)
	}
	return nil
}

// Remove takes t out of the pool in the order that never leaves a
// credential with access to keys it should not have: the role first (the
// user can then touch nothing), then every key under the prefix, then the
// user. Each step tolerates having been done before.
func Remove(ctx context.Context, cli *clientv3.Client, t Tenant) error {
	if _, err := cli.RoleDelete(ctx, t.Role); err != nil && !errors.Is(err, rpctypes.ErrRoleNotFound) {
		return fmt.Errorf("deleting etcd role %s: %w", t.Role, err)
	}
	if _, err := cli.Delete(ctx, t.Prefix, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("deleting the keys under %s: %w", t.Prefix, err)
	}
	if _, err := cli.UserDelete(ctx, t.User); err != nil && !errors.Is(err, rpctypes.ErrUserNotFound) {
		return fmt.Errorf("deleting etcd user %s: %w", t.User, err)
	}
	return nil
}

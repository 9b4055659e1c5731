// Package controller is capn's provisioner: it turns each NestedCluster
// into a running control plane in the management cluster.
//
// # Loops
//
// Start (run.go) builds the loops under leader election from one Settings
// (config.go), filled by capn-apiserver from its flags, and the Deps beside
// it (clients, provider collaborators). Each loop has its own constructor,
// queue and Run:
//
//   - ClusterController (controller.go): the clusters queue. Its sync runs
//     the steps below; watch.go enqueues a cluster when an object capn owns
//     in the management cluster changes, and sweep.go deletes the
//     management namespaces whose cluster is gone.
//   - PoolController (pools.go): the pools queue, each NestedEtcdPool's
//     finalizer and status.
//   - BackupController (backups.go): the backups queue, taking and deleting
//     NestedClusterBackups.
//   - activityMonitor (activity.go): no queue of its own; it reads an
//     awake tenant's request counter in goroutines and enqueues the cluster
//     once it is idle.
//
// What more than one loop uses is in Shared, built once by NewShared: env
// (env.go: the clients, the clock, the settings and the write primitives,
// applyIfChanged and writeStatus), the clusters queue the others enqueue
// on, etcdAccess (etcdpool.go, tenantetcd.go: pools and tenants' etcd) and
// the activity monitor.
//
// # A cluster's sync
//
// sync(key) runs one operation per type, each in its own file(s), in order:
//
//   - finalizer (finalizer.go, dataplane.go): the finalizer and deletion;
//     pause.go stops at a paused cluster.
//   - workloads (namespace.go, observation.go): the namespace, which
//     starts the sync's target (builders.Params), and the one read of the
//     workloads.
//   - poolMembership (etcdpool.go): a pooled cluster's etcd user and keys.
//   - workloads (workloads.go): the Services, whose addresses complete the
//     target.
//   - credentials (pki.go, externaletcd.go): certificates and external etcd
//     credentials.
//   - upgrader (upgrade.go, upgrade_pods.go, upgrade_status.go): ordered
//     upgrades.
//   - workloads again (workloads.go, prune.go): everything else.
//   - restorer (restore.go), sleeper (sleep.go), workloads (images.go).
//   - tenantAccess (bootstrap.go, etcdloss.go): the tenant's RBAC bootstrap.
//   - status.go: deriveStatus, a pure function of the sync's observation.
//
// The management cluster is reached through Management (management.go,
// cached.go); kinds.go is the one table of the kinds capn writes there.
// Every operation reads before it writes and writes only on a difference,
// so a resync of an unchanged, Ready cluster makes no writes at all.
package controller

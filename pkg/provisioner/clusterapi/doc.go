// Package clusterapi is capn's Cluster API control-plane provider (contract
// v1beta2): a loop that turns each NestedControlPlane into exactly one
// NestedCluster of the same name in its namespace and mirrors that
// NestedCluster's status back in the shape Cluster API reads, and a loop
// that marks NestedInfraClusters provisioned. The NestedCluster is the one
// source of truth: creation, spec changes, /scale, /upgrade and deletion all
// go through its API, so no lifecycle logic is written twice.
//
// One file per lifecycle operation, as in Cluster API's KubeadmControlPlane:
// nestedcluster.go (create and spec), scale.go, upgrade.go, kubeconfig.go,
// status.go, delete.go; controller.go holds the loop, infracluster.go the
// infrastructure loop.
package clusterapi

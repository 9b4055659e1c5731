// Package controller is capn's provisioner: it turns each NestedCluster
// into a running control plane in the management cluster. sync(key) runs
// one operation per file, in order: finalizer.go (and deletion), pause.go,
// namespace.go, workloads.go (Services first, for their ClusterIPs),
// pki.go, workloads.go again (everything else) and status.go. Every
// operation reads before it writes and writes only on a difference, so a
// resync of an unchanged, Ready cluster makes no writes at all.
package controller

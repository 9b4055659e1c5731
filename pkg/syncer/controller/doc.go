// Package controller is the syncer: it runs a tenant's pods on the
// management ("host") cluster. It publishes one virtual Node in the tenant
// per host node that may run tenant pods, lets the tenant's own scheduler
// bind pods to them, creates each bound pod in the tenant's workload
// namespace on the host (pinned to that node), and writes the host pod's
// status back to the tenant pod. ConfigMaps, Secrets and service-account
// tokens the pods need, and the tenant's ClusterIP Services, follow; the
// host's Events about a host pod are mirrored onto its tenant pod.
//
// Each kind of object is kept in step by its own kindSyncer (runner.go):
// informer handlers that enqueue keys on the kind's own queue, and a
// sync(ctx, key) that reads caches, computes what the host or tenant
// should hold (pure builders in pkg/syncer/translate), and writes only a
// difference through applyIfChanged (apply.go), so that a syncer in step
// makes no requests. The kinds are listed once, in Syncer.kinds; the
// runner makes their queues and workers, retries failed keys with backoff
// and waits for the caches. A kind whose change implies another kind's
// work enqueues onto that kind's queue (registrar.queue).
//
// Every loop but the Event mirror (events.go) is level-triggered: the
// syncer can stop at any point and converge when it starts again. Host
// objects are found by their deterministic names (names.Host) and checked
// against the tenant UID they record, so a restart neither duplicates nor
// orphans anything.
package controller

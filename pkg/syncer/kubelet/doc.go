// Package kubelet serves the part of the kubelet API a tenant's
// kube-apiserver calls on a virtual Node, and replays each call against
// the management apiserver, where the tenant pod really runs.
//
// A tenant pod bound to a virtual Node has no kubelet: the syncer runs it
// as a host pod in the tenant's workload namespace. When a tenant user
// runs kubectl logs, exec, attach or port-forward, the tenant apiserver
// connects to https://<virtual node InternalIP>:<kubeletEndpoint port>
// with its kubelet client certificate and asks for
//
//	GET      /containerLogs/{namespace}/{pod}/{container}?follow=…
//	GET|POST /exec/{namespace}/{pod}[/{uid}]/{container}?command=…&input=1…
//	GET|POST /attach/{namespace}/{pod}[/{uid}]/{container}?input=1…
//	GET|POST /portForward/{namespace}/{pod}[/{uid}][?port=…]
//	POST     /run/{namespace}/{pod}[/{uid}]/{container}?cmd=…
//
// (the paths and parameters of k8s.io/kubernetes pkg/kubelet/server). The
// handler here, in front of that address:
//
//  1. accepts only a client certificate that verifies against the tenant
//     CA and carries one of the configured common names (the tenant
//     apiserver's kubelet client): the TLS handshake requires it
//     (TLSConfig) and the handler checks it again, so a server built
//     with a laxer tls.Config still refuses;
//  2. parses the path and an allow-list of query parameters, bounded, and
//     refuses anything else (every other kubelet path is 404: no stats,
//     pods, metrics, configz or debug handlers exist here);
//  3. resolves the tenant pod to its host pod through Resolver: the tenant
//     pod must exist and be bound, and the host pod at names.Host(ns,
//     name) must record that very pod (namespace, name and UID) as its
//     tenant identity, so a tenant can reach only its own pods, and a
//     stale host pod of an earlier pod of the same name is not reached;
//  4. replays the call as the syncer, with the syncer's own management
//     credentials, on /api/v1/namespaces/{workload}/pods/{host}/log, exec,
//     attach or portforward: logs through client-go, streamed and
//     flushed as they come; exec, attach and port-forward through
//     k8s.io/apimachinery's UpgradeAwareHandler, which relays the SPDY or
//     WebSocket upgrade and then copies bytes both ways; /run as a
//     non-interactive exec whose output is the response body.
//
// The tenant's identity and credentials never reach the management
// apiserver: only an allow-list of protocol headers is forwarded, so an
// incoming Authorization, Impersonate-* or X-Remote-* header (or a
// WebSocket bearer-token subprotocol) is dropped before the syncer's
// credentials are added.
package kubelet

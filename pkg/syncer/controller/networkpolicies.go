package controller

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// ReasonNetworkPolicyNarrowed: a tenant NetworkPolicy allows less on the
// host than it says (an ipBlock narrowed to the tenant's own pods, a
// policy over the size bound): translate.NetworkPolicy's notes.
const ReasonNetworkPolicyNarrowed = "NetworkPolicyNarrowed"

// networkPolicyKind gives each tenant NetworkPolicy its host
// NetworkPolicy in the workload namespace, and removes the host policy of
// one that is gone. Which pods a policy isolates is podKind's (the
// markers it puts on host pods); this kind only writes the policies.
type networkPolicyKind struct {
	*Syncer
	q queue
}

func (k *networkPolicyKind) name() string { return kindNetworkPolicies }

func (k *networkPolicyKind) register(r *registrar) {
	k.q = r.queue(kindNetworkPolicies)
	handle(k.tenant.Networking().V1().NetworkPolicies().Informer(), func(obj any) { k.q.Add(key(obj)) })
	handle(k.host.Networking().V1().NetworkPolicies().Informer(), byIdentity(k.q))
	// An ipBlock selects pods by address, and a named port resolves
	// against the pods a rule applies to: translate again when a host
	// pod comes, goes, or changes its address or labels.
	_, _ = k.host.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { k.enqueueByPods() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Pod)
			c, ok2 := cur.(*corev1.Pod)
			if !ok1 || !ok2 || o.Status.PodIP != c.Status.PodIP || !maps.Equal(o.Labels, c.Labels) {
				k.enqueueByPods()
			}
		},
		DeleteFunc: func(any) { k.enqueueByPods() },
	})
}

// enqueueByPods enqueues the tenant policies whose translation depends
// on the pods: those with an ipBlock peer or a named port.
func (k *networkPolicyKind) enqueueByPods() {
	policies, err := k.tenantPolicies.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range policies {
		if dependsOnPods(p) {
			k.q.Add(p.Namespace + "/" + p.Name)
		}
	}
}

func dependsOnPods(p *networkingv1.NetworkPolicy) bool {
	check := func(peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) bool {
		return slices.ContainsFunc(peers, func(peer networkingv1.NetworkPolicyPeer) bool { return peer.IPBlock != nil }) ||
			slices.ContainsFunc(ports, func(port networkingv1.NetworkPolicyPort) bool {
				return port.Port != nil && port.Port.Type == intstr.String
			})
	}
	for _, r := range p.Spec.Ingress {
		if check(r.From, r.Ports) {
			return true
		}
	}
	for _, r := range p.Spec.Egress {
		if check(r.To, r.Ports) {
			return true
		}
	}
	return false
}

// networkPolicyFields: the host policy is all the translation's.
var networkPolicyFields = owned[*networkingv1.NetworkPolicy]{
	equal: func(cur, want *networkingv1.NetworkPolicy) bool {
		return equality.Semantic.DeepEqual(cur.Spec, want.Spec) && equality.Semantic.DeepEqual(cur.Labels, want.Labels)
	},
	merge: func(cur, want *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicy {
		upd := cur.DeepCopy()
		upd.Labels, upd.Spec = want.Labels, want.Spec
		return upd
	},
}

// sync converges the tenant NetworkPolicy key, "<namespace>/<name>".
func (k *networkPolicyKind) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	client := k.o.Host.NetworkingV1().NetworkPolicies(k.o.WorkloadNamespace)
	cur, err := cached(k.hostPolicies.NetworkPolicies(k.o.WorkloadNamespace).Get(names.Host(ns, name)))
	if err != nil {
		return err
	}
	tenant, err := cached(k.tenantPolicies.NetworkPolicies(ns).Get(name))
	if err != nil {
		return err
	}
	if tenant == nil || tenant.DeletionTimestamp != nil {
		if cur == nil {
			return nil
		}
		return deleteUID(ctx, client.Delete, cur)
	}
	if cur != nil && cur.Labels[names.TenantUIDLabel] != string(tenant.UID) {
		// Made for an earlier policy of the same name.
		if err := deleteUID(ctx, client.Delete, cur); err != nil {
			return err
		}
		return fmt.Errorf("network policy %s: replaced, recreating", key)
	}
	pods, err := k.policyPods()
	if err != nil {
		return err
	}
	want, notes := translate.NetworkPolicy(tenant, translate.PolicyContext{WorkloadNamespace: k.o.WorkloadNamespace, Pods: pods})
	_, done, err := applyIfChanged(ctx, client, cur, want, networkPolicyFields)
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota") {
		// The tenant's pods this policy isolates are marked already, so
		// they accept (or send) nothing until it fits: closed, not open.
		k.recorder.Event(tenant, corev1.EventTypeWarning, ReasonHostQuotaExceeded, "the tenant's data-plane quota of NetworkPolicies is used up; the pods this policy selects allow nothing until it fits")
	}
	if err == nil && done != unchanged && len(notes) > 0 {
		k.recorder.Event(tenant, corev1.EventTypeWarning, ReasonNetworkPolicyNarrowed, translate.BoundMessage(strings.Join(notes, "; ")))
	}
	return err
}

// policyPods are the synced pods as their host pods show them: tenant
// UID, address, labels and container ports. A pod without an address yet
// still resolves named ports.
func (k *networkPolicyKind) policyPods() ([]translate.PolicyPod, error) {
	hosts, err := k.hostPods.Pods(k.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]translate.PolicyPod, 0, len(hosts))
	for _, h := range hosts {
		uid := h.Labels[names.TenantUIDLabel]
		if uid == "" {
			continue
		}
		p := translate.PolicyPod{UID: uid, Labels: h.Labels}
		if ip, err := netip.ParseAddr(h.Status.PodIP); err == nil {
			p.IP = ip
		}
		for _, c := range h.Spec.Containers {
			p.Ports = append(p.Ports, c.Ports...)
		}
		out = append(out, p)
	}
	return out, nil
}

package controller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// fieldManager owns what the syncer writes, on both sides.
const fieldManager = "capn-syncer"

// Reasons on tenant pods and their Events.
const (
	// ReasonSyncRefused: the pod asks for something the shared data plane
	// does not give tenants; it fails with the reasons, nothing runs.
	ReasonSyncRefused = "SyncRefused"
	// ReasonHostPodDeleted: the host pod vanished under a running tenant
	// pod (deleted by hand, evicted, its node gone); the pod fails so its
	// controller replaces it, as after an eviction.
	ReasonHostPodDeleted = "HostPodDeleted"
	// ReasonUpdateRefused: an update of a running pod (an image) that the
	// shared data plane cannot apply; the pod runs on as it was.
	ReasonUpdateRefused = "UpdateRefused"
	// ReasonWaitingForReferences: a ConfigMap or Secret the pod names does
	// not exist in the tenant yet.
	ReasonWaitingForReferences = "WaitingForReferences"
	// ReasonHostQuotaExceeded: the workload namespace's ResourceQuota has
	// no room for the pod yet.
	ReasonHostQuotaExceeded = "HostQuotaExceeded"
)

// Annotations on a pod's own Secret.
const (
	// tokensRefreshAtAnnotation is when the Secret's tokens are next due
	// (RFC 3339), the earliest over its tokens.
	tokensRefreshAtAnnotation = "capn.dev/tokens-refresh-at"
	// tokensForAnnotation is the tenant pod UID the tokens are bound to.
	tokensForAnnotation = "capn.dev/tokens-for"
)

// podKind creates, replaces and deletes host pods (spec down-sync).
type podKind struct {
	*Syncer
	// q is its own queue: token refreshes requeue the pod when due.
	q queue
}

func (k *podKind) name() string { return kindPods }

func (k *podKind) register(r *registrar) {
	k.q = r.queue(kindPods)
	handle(k.tenant.Core().V1().Pods().Informer(), func(obj any) { k.q.Add(key(obj)) })
	// A host pod carries its namespace's labels and the isolation its
	// namespace's NetworkPolicies give it (translate.PodLabels).
	_, _ = k.tenant.Core().V1().Namespaces().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Namespace)
			c, ok2 := cur.(*corev1.Namespace)
			if ok1 && ok2 && !maps.Equal(o.Labels, c.Labels) {
				k.enqueueNamespace(c.Name)
			}
		},
	})
	handle(k.tenant.Networking().V1().NetworkPolicies().Informer(), func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			k.enqueueNamespace(m.GetNamespace())
		}
	})
}

// enqueueNamespace enqueues the tenant pods of namespace ns.
func (k *podKind) enqueueNamespace(ns string) {
	pods, err := k.tenantPods.Pods(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		k.q.Add(p.Namespace + "/" + p.Name)
	}
}

// sync converges one tenant pod, key "<namespace>/<name>", and its host
// pod.
func (k *podKind) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	hostName := names.Host(ns, name)
	tenant, err := cached(k.tenantPods.Pods(ns).Get(name))
	if err != nil {
		return err
	}
	host, err := cached(k.hostPods.Pods(k.o.WorkloadNamespace).Get(hostName))
	if err != nil {
		return err
	}
	// A host pod made for an earlier tenant pod of the same name (a
	// StatefulSet's replacement) is that pod's: delete it first.
	if host != nil && (tenant == nil || host.Labels[names.TenantUIDLabel] != string(tenant.UID)) {
		return k.deleteHostPod(ctx, host, nil)
	}
	if tenant == nil {
		return nil
	}
	if tenant.DeletionTimestamp != nil {
		return k.finishDeletion(ctx, tenant, host)
	}
	if tenant.Spec.NodeName == "" || isTerminal(tenant) {
		return nil
	}
	if _, err := k.hostNodes.Get(tenant.Spec.NodeName); err != nil {
		// Bound to a Node that is not one of ours (a joined real node).
		return nil
	}
	if host == nil {
		if tenant.Status.HostIP != "" || tenant.Status.Phase == corev1.PodRunning {
			// It ran, and its host pod is gone: like an eviction.
			return k.failTenantPod(ctx, tenant, ReasonHostPodDeleted, "the pod's host pod was deleted")
		}
		return k.createHostPod(ctx, tenant)
	}
	if err := k.refreshTokens(ctx, tenant, host); err != nil {
		return err
	}
	// The spec update writes the host pod as the labels' left it.
	if host, err = k.syncLabels(ctx, key, tenant, host); err != nil {
		return err
	}
	if err := k.syncSpec(ctx, tenant, host); err != nil {
		return err
	}
	return k.upSync(ctx, tenant, host)
}

// syncSpec carries a tenant's update of a running pod (a new image, a
// shorter activeDeadlineSeconds) to its host pod, and records the tenant
// generation it was rendered from, which the tenant pod's
// observedGeneration reports once the kubelet has seen it. It translates
// only when the tenant's generation moved. An update today's rules refuse
// leaves the host pod as it runs, with a Warning Event.
func (k *podKind) syncSpec(ctx context.Context, tenant, host *corev1.Pod) error {
	if g, ok := translate.RenderedGeneration(host); ok && g == tenant.Generation {
		return nil
	}
	c, err := k.podContext(tenant)
	if err != nil {
		return err
	}
	res, errs := translate.Pod(tenant, c)
	var upd *corev1.Pod
	if len(errs) == 0 {
		upd, errs = translate.SpecUpdate(host, res.Pod)
	}
	if len(errs) > 0 {
		k.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonUpdateRefused, "the update is not applied to the running pod: %s", refusal(errs))
		return nil
	}
	if _, err := k.o.Host.CoreV1().Pods(host.Namespace).Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("updating host pod %s: %w", host.Name, err)
	}
	return nil
}

// legacyLabelsRecheck is how soon a host pod that keeps its tenant
// labels as they were (legacySelectors) looks again.
const legacyLabelsRecheck = 5 * time.Second

// syncLabels keeps a running host pod's labels what PodLabels says now:
// its tenant pod's and namespace's labels change, and so does the
// isolation the tenant's NetworkPolicies give it. Labels are mutable, so
// nothing restarts.
//
// A host pod made before red-team finding 8's fix carries the tenant's
// keys as they are, and host Services made then select them. Until every
// host Service selects by the carried keys (serviceKind rewrites them),
// the pod keeps its old keys beside the new ones, so no Service loses an
// endpoint while the two move.
func (k *podKind) syncLabels(ctx context.Context, key string, tenant, host *corev1.Pod) (*corev1.Pod, error) {
	c, err := k.labelContext(tenant, k.o.Pod)
	if err != nil {
		return nil, err
	}
	want := host.DeepCopy()
	want.Labels = translate.PodLabels(tenant, c)
	if down := translate.DownwardAnnotations(tenant); translate.DownwardAnnotationsFit(down) {
		want.Annotations = translate.WithDownwardAnnotations(host.Annotations, down)
	} else {
		k.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonUpdateRefused,
			"the labels and annotations the pod's downward-API volumes and env read exceed %d bytes; the pod keeps their earlier values", translate.MaxDownwardBytes)
	}
	legacy, err := k.legacySelectors()
	if err != nil {
		return nil, err
	}
	if legacy {
		kept := false
		for l, v := range host.Labels {
			if !names.CapnOwnedLabel(l) {
				want.Labels[l], kept = v, true
			}
		}
		if kept {
			k.q.AddAfter(key, legacyLabelsRecheck)
		}
	}
	got, _, err := applyIfChanged(ctx, k.o.Host.CoreV1().Pods(k.o.WorkloadNamespace), host, want, podMetadataFields)
	return got, err
}

// podMetadataFields: a host pod's labels are all the syncer's, and so are
// its downward annotations (the tenant's labels and annotations its
// downward-API volumes read), whose edits the kubelet writes to the files.
var podMetadataFields = owned[*corev1.Pod]{
	equal: func(cur, want *corev1.Pod) bool {
		return maps.Equal(cur.Labels, want.Labels) && maps.Equal(cur.Annotations, translate.WithDownwardAnnotations(cur.Annotations, want.Annotations))
	},
	merge: func(cur, want *corev1.Pod) *corev1.Pod {
		upd := cur.DeepCopy()
		upd.Labels = want.Labels
		upd.Annotations = translate.WithDownwardAnnotations(cur.Annotations, want.Annotations)
		return upd
	},
}

// legacySelectors reports whether a host Service still selects by a
// tenant key as it is (written before finding 8's fix).
func (s *Syncer) legacySelectors() (bool, error) {
	svcs, err := s.hostServices.Services(s.o.WorkloadNamespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, svc := range svcs {
		for l := range svc.Spec.Selector {
			if !names.CapnOwnedLabel(l) {
				return true, nil
			}
		}
	}
	return false, nil
}

// podStatusKind up-syncs a running pod's status after its host pod
// changed, on its own queue and workers, so that a burst of host-pod
// creations on the pods queue does not hold back Ready for pods already
// running.
type podStatusKind struct {
	*Syncer
	// pods gets anything but an up-sync.
	pods queue
}

func (k *podStatusKind) name() string { return kindPodStatus }

func (k *podStatusKind) register(r *registrar) {
	k.pods = r.queue(kindPods)
	handle(k.host.Core().V1().Pods().Informer(), byIdentity(r.queue(kindPodStatus)))
}

// sync up-syncs the status of the tenant pod key, and hands anything else
// (a host pod gone, replaced or orphaned, a tenant pod deleting) to
// podKind, so that only one of the two creates or deletes. Both may update
// the same tenant pod at once; the loser's write conflicts and is retried.
func (k *podStatusKind) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	tenant, err := k.tenantPods.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	host, err := k.hostPods.Pods(k.o.WorkloadNamespace).Get(names.Host(ns, name))
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if tenant == nil || host == nil || host.Labels[names.TenantUIDLabel] != string(tenant.UID) ||
		tenant.DeletionTimestamp != nil || isTerminal(tenant) {
		k.pods.Add(key)
		return nil
	}
	return k.upSync(ctx, tenant, host)
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// createHostPod translates the tenant pod, syncs what it references and
// its own Secret, and creates it on the host. A refused pod fails in the
// tenant with the reasons and an Event; nothing is created for it.
func (k *podKind) createHostPod(ctx context.Context, tenant *corev1.Pod) error {
	c, err := k.podContext(tenant)
	if err != nil {
		return err
	}
	svcs, err := k.tenantServices.Services(tenant.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, svc := range svcs {
		c.Services = append(c.Services, *svc)
	}
	res, errs := translate.Pod(tenant, c)
	if len(errs) > 0 {
		return k.failTenantPod(ctx, tenant, ReasonSyncRefused, refusal(errs))
	}
	ferr, err := k.checkCopies(tenant.Namespace, res)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", tenant.Namespace, tenant.Name, err)
	}
	if ferr != nil {
		return k.failTenantPod(ctx, tenant, ReasonSyncRefused, refusal(field.ErrorList{ferr}))
	}
	// Before the copies are confirmed: the collector must not take one
	// between this check and the host pod's appearance in its cache.
	k.markUsed(tenant.Namespace, res)
	missing, err := k.syncReferences(ctx, tenant.Namespace, res)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		k.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonWaitingForReferences, "waiting for %s", strings.Join(missing, ", "))
		return fmt.Errorf("pod %s/%s: waiting for %s", tenant.Namespace, tenant.Name, strings.Join(missing, ", "))
	}
	if res.SecretName != "" {
		if err := k.ensurePodSecret(ctx, tenant, res); err != nil {
			return err
		}
	}
	pod := res.Pod
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, k.o.HostTolerations...)
	if _, err := k.o.Host.CoreV1().Pods(k.o.WorkloadNamespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the informer has not shown it yet; its event requeues
		}
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota") {
			// The workload namespace is full for now: the pod waits, as a
			// Deployment's pods wait for quota, rather than failing.
			k.recorder.Event(tenant, corev1.EventTypeWarning, ReasonHostQuotaExceeded, "the tenant's data-plane quota is used up; the pod waits")
			return fmt.Errorf("pod %s/%s: %w", tenant.Namespace, tenant.Name, err)
		}
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			// The workload namespace's admission (Pod Security, quota)
			// refused it: the tenant sees the host's reason, which is
			// about its own pod.
			return k.failTenantPod(ctx, tenant, ReasonSyncRefused, "the management cluster refused the pod: "+string(apierrors.ReasonForError(err))+": "+translate.BoundMessage(err.Error()))
		}
		return fmt.Errorf("creating host pod for %s/%s: %w", tenant.Namespace, tenant.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("created host pod", "pod", klog.KObj(tenant), "host", pod.Name)
	return nil
}

// podContext is the translation context of tenant: the pod is checked
// against, and pointed at, the nameserver the tenant's DNS has now, so a
// pod that names it (dnsPolicy None) translates the same when created and
// when its tokens are refreshed.
func (k *podKind) podContext(tenant *corev1.Pod) (translate.Context, error) {
	c := k.o.Pod
	ns, err := k.nameserver()
	if err != nil {
		return c, fmt.Errorf("pod %s/%s: %w", tenant.Namespace, tenant.Name, err)
	}
	c.Nameserver = ns
	return k.labelContext(tenant, c)
}

// labelContext adds what the host pod's labels need to c: its tenant
// namespace's labels and the isolation its namespace's NetworkPolicies
// give it (translate.PodLabels).
func (k *podKind) labelContext(tenant *corev1.Pod, c translate.Context) (translate.Context, error) {
	tns, err := k.tenantNamespaces.Get(tenant.Namespace)
	if err != nil {
		return c, fmt.Errorf("pod %s/%s: its namespace: %w", tenant.Namespace, tenant.Name, err)
	}
	c.NamespaceLabels = tns.Labels
	policies, err := k.tenantPolicies.NetworkPolicies(tenant.Namespace).List(labels.Everything())
	if err != nil {
		return c, err
	}
	c.IngressIsolated, c.EgressIsolated = translate.IsolatedBy(tenant, policies)
	return c, nil
}

// refusal is the tenant-facing text of a translation's errors, bounded.
func refusal(errs field.ErrorList) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		parts = append(parts, e.Error())
	}
	return translate.BoundMessage(strings.Join(parts, "; "))
}

// failTenantPod moves a pod the syncer cannot run to Failed, with reason,
// and tells the tenant with a Warning Event. Only once: a Failed pod is
// terminal and never synced again.
func (k *podKind) failTenantPod(ctx context.Context, tenant *corev1.Pod, reason, message string) error {
	upd := tenant.DeepCopy()
	upd.Status.Phase = corev1.PodFailed
	upd.Status.Reason = reason
	upd.Status.Message = message
	if _, err := k.o.Tenant.CoreV1().Pods(tenant.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("failing pod %s/%s: %w", tenant.Namespace, tenant.Name, err)
	}
	k.recorder.Event(tenant, corev1.EventTypeWarning, reason, message)
	return nil
}

// upSync writes the host pod's status to the tenant pod when it differs.
func (s *Syncer) upSync(ctx context.Context, tenant, host *corev1.Pod) error {
	want := &corev1.Pod{ObjectMeta: tenant.ObjectMeta, Status: translate.Status(tenant, host)}
	_, _, err := applyIfChanged(ctx, statusWriter{s.o.Tenant.CoreV1().Pods(tenant.Namespace)}, tenant, want, podStatusFields)
	return err
}

// podStatusFields: the status, all of it the host's.
var podStatusFields = ownedField(func(p *corev1.Pod) *corev1.PodStatus { return &p.Status })

// statusWriter updates a pod's status subresource. It never creates:
// upSync has a tenant pod.
type statusWriter struct{ typedcorev1.PodInterface }

func (w statusWriter) Update(ctx context.Context, p *corev1.Pod, o metav1.UpdateOptions) (*corev1.Pod, error) {
	return w.UpdateStatus(ctx, p, o)
}

// finishDeletion is the kubelet's half of a graceful delete: the host pod
// gets the tenant pod's grace period, within the provider's bound, and
// once it is gone the tenant pod is removed for good.
func (k *podKind) finishDeletion(ctx context.Context, tenant, host *corev1.Pod) error {
	if host != nil {
		return k.deleteHostPod(ctx, host, translate.DeletionGracePeriod(tenant.DeletionGracePeriodSeconds, k.o.Pod))
	}
	err := k.o.Tenant.CoreV1().Pods(tenant.Namespace).Delete(ctx, tenant.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &tenant.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// deleteHostPod deletes host (the UID precondition keeps it from hitting
// a newer pod of the same name); gcKind collects what it referenced once
// it is gone.
func (k *podKind) deleteHostPod(ctx context.Context, host *corev1.Pod, grace *int64) error {
	if host.DeletionTimestamp == nil {
		err := k.o.Host.CoreV1().Pods(host.Namespace).Delete(ctx, host.Name, metav1.DeleteOptions{
			GracePeriodSeconds: grace,
			Preconditions:      &metav1.Preconditions{UID: &host.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting host pod %s: %w", host.Name, err)
		}
	}
	return nil
}

// ensurePodSecret writes the pod's own Secret: its tenant identity for the
// downward API and its service-account tokens, requested from the tenant
// apiserver bound to the tenant pod.
func (k *podKind) ensurePodSecret(ctx context.Context, tenant *corev1.Pod, res *translate.Result) error {
	name := res.SecretName
	data := map[string][]byte{}
	for k, v := range res.SecretData {
		data[k] = v
	}
	refreshAt, err := k.requestTokens(ctx, tenant, res.Tokens, data)
	if err != nil {
		return err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: k.o.WorkloadNamespace,
			Labels:      translate.HostLabels(tenant.Namespace, string(tenant.UID)),
			Annotations: map[string]string{names.TenantNameAnnotation: tenant.Name, tokensForAnnotation: string(tenant.UID)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if !refreshAt.IsZero() {
		sec.Annotations[tokensRefreshAtAnnotation] = refreshAt.UTC().Format(time.RFC3339)
	}
	secrets := k.o.Host.CoreV1().Secrets(k.o.WorkloadNamespace)
	cur, err := k.hostSecrets.Secrets(k.o.WorkloadNamespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			cur, err = secrets.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return k.replaceSecret(ctx, cur, sec)
		}
		return err
	case err != nil:
		return err
	}
	return k.replaceSecret(ctx, cur, sec)
}

func (k *podKind) replaceSecret(ctx context.Context, cur, want *corev1.Secret) error {
	upd := cur.DeepCopy()
	upd.Labels, upd.Annotations, upd.Data = want.Labels, want.Annotations, want.Data
	_, err := k.o.Host.CoreV1().Secrets(cur.Namespace).Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	return err
}

// requestTokens fills data with a fresh token for each projection and
// returns when the first of them is due for refresh (zero for none).
func (k *podKind) requestTokens(ctx context.Context, tenant *corev1.Pod, tokens []translate.Token, data map[string][]byte) (time.Time, error) {
	var due time.Time
	sa := tenant.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	for _, t := range tokens {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(translate.TokenExpirationSeconds(t.ExpirationSeconds)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: tenant.Name, UID: tenant.UID},
		}}
		if t.Audience != "" {
			tr.Spec.Audiences = []string{t.Audience}
		}
		issued := k.now()
		got, err := k.o.Tenant.CoreV1().ServiceAccounts(tenant.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
		if err != nil {
			return time.Time{}, fmt.Errorf("token for pod %s/%s: %w", tenant.Namespace, tenant.Name, err)
		}
		data[t.Key] = []byte(got.Status.Token)
		at := translate.TokenRefreshAt(issued, got.Status.ExpirationTimestamp.Time)
		if due.IsZero() || at.Before(due) {
			due = at
		}
	}
	return due, nil
}

// refreshTokens renews a running pod's tokens when due, and requeues the
// pod for the next refresh.
func (k *podKind) refreshTokens(ctx context.Context, tenant, host *corev1.Pod) error {
	name := translate.PodSecretName(host.Name)
	sec, err := k.hostSecrets.Secrets(k.o.WorkloadNamespace).Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil // a pod with nothing to project
		}
		return err
	}
	at, err := time.Parse(time.RFC3339, sec.Annotations[tokensRefreshAtAnnotation])
	if err != nil {
		return nil // no tokens
	}
	if wait := at.Sub(k.now()); wait > 0 {
		k.q.AddAfter(tenant.Namespace+"/"+tenant.Name, wait)
		return nil
	}
	c, err := k.podContext(tenant)
	if err != nil {
		return err
	}
	res, errs := translate.Pod(tenant, c)
	if len(errs) > 0 {
		// A pod created before a rule tightened keeps running, but its
		// tokens lapse: say so, or the provider sees only the tenant's
		// authentication errors.
		klog.FromContext(ctx).Info("not refreshing tokens: the pod is refused by today's rules", "pod", klog.KObj(tenant), "reasons", refusal(errs))
		return nil
	}
	if res.SecretName == "" {
		return nil
	}
	return k.ensurePodSecret(ctx, tenant, res)
}

package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
)

// SpecHashAnnotation records the hash of what capn last applied. Comparing
// it with the desired object's hash is how an unchanged resync makes no
// writes: a live object carries defaults and status, so comparing it field
// by field with the desired one would always differ.
const SpecHashAnnotation = "capn.dev/spec-hash"

// workloads renders and applies the control plane's objects and observes
// them (namespace.go, observation.go, images.go, prune.go).
type workloads struct {
	*env
	placement builders.Placement
	dataPlane builders.DataPlane
	network   builders.Network
}

// ensureServices applies the Services first and returns p with their
// addresses: the ClusterIPs go into the certificates and flags of
// everything else. Services do not depend on the addresses, so rendering
// them without is exact.
func (c *workloads) ensureServices(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params) (builders.Params, error) {
	objs, err := builders.All(nc, p)
	if err != nil {
		return p, fmt.Errorf("rendering: %w", err)
	}
	var applied []string
	for _, o := range objs {
		svc, ok := o.(*corev1.Service)
		if !ok {
			continue
		}
		live, changed, err := c.applyIfChanged(ctx, svc)
		if err != nil {
			return p, fmt.Errorf("service %s: %w", svc.Name, err)
		}
		if changed {
			applied = append(applied, "Service/"+svc.Name)
		}
		ls := live.(*corev1.Service)
		ip := ls.Spec.ClusterIP
		switch svc.Name {
		case provisioner.APIServerName:
			p.APIServerServiceIP = ip
			p.APIServerExternalAddress = access.LoadBalancerAddress(ls)
		case provisioner.EtcdName:
			p.EtcdServiceIP = ip
		}
	}
	c.reportApplied(ctx, nc, applied)
	return p, nil
}

// ensureWorkloads applies everything but the namespace and Services
// (ensured before, since the rest depends on them). o is the sync's
// observation: its workloads size the quota during a rollout, and what is
// applied here replaces them in it.
func (c *workloads) ensureWorkloads(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params, o *observation) error {
	objs, err := renderAtRevisions(nc, p, o)
	if err != nil {
		return fmt.Errorf("rendering: %w", err)
	}
	quotaForRollout(nc, p, objs, o.live())
	var applied []string
	for _, obj := range objs {
		switch obj.(type) {
		case *corev1.Namespace:
			// The control-plane namespace was ensured first; the
			// workload namespace is applied here, before what goes in it.
			if obj.GetName() == p.Namespace {
				continue
			}
		case *corev1.Service:
			continue
		}
		live, changed, err := c.applyIfChanged(ctx, obj)
		if err != nil {
			return fmt.Errorf("%s %s: %w", kindOf(obj), obj.GetName(), err)
		}
		if changed {
			applied = append(applied, kindOf(obj)+"/"+obj.GetName())
			o.record(live)
		}
	}
	c.reportApplied(ctx, nc, applied)
	return c.prune(ctx, nc, p.Namespace, objs)
}

// renderAtRevisions renders the control plane with each existing workload
// at the template revision it runs (builders/revision.go), so that a capn
// release that changes a pod-template default rolls no tenant by itself.
// A workload whose pod template changes anyway (a spec edit, an upgrade
// step, a renewed certificate, a hand edit being repaired) moves to the
// target revision in the same roll; none moves back to an older one.
func renderAtRevisions(nc *v1alpha1.NestedCluster, p builders.Params, o *observation) ([]builders.Object, error) {
	p.Revisions = builders.TemplateRevisions{}
	for component, live := range o.workloads {
		p.Revisions[component] = builders.RevisionOf(live)
	}
	objs, err := builders.All(nc, p)
	if err != nil {
		return nil, err
	}
	target := p.TargetRevision()
	moved := false
	for _, obj := range objs {
		switch obj.(type) {
		case *appsv1.Deployment, *appsv1.StatefulSet:
		default:
			continue
		}
		live, ok := o.workloads[obj.GetName()] // workloads are named after their components
		if !ok || kindOf(live) != kindOf(obj) || p.Revisions[obj.GetName()] >= target {
			continue
		}
		same, err := ownsDesiredTemplate(live, obj)
		if err != nil {
			return nil, err
		}
		if !same {
			p.Revisions[obj.GetName()] = target
			moved = true
		}
	}
	if !moved {
		return objs, nil
	}
	return builders.All(nc, p)
}

// quotaForRollout re-renders the ResourceQuota in objs from the rendered
// workloads and the live ones: while a change that lowers a component's
// resources rolls out, its old pods still count at the old size, and a
// quota of the new size alone would refuse the new pods and stall it.
func quotaForRollout(nc *v1alpha1.NestedCluster, p builders.Params, objs, live []builders.Object) {
	for i, o := range objs {
		// The control plane's quota only: the workload namespace's comes
		// from spec.dataPlane.quota, not from the workloads.
		if _, ok := o.(*corev1.ResourceQuota); ok && o.GetName() == builders.ResourceQuotaName {
			objs[i] = builders.ResourceQuota(nc, p, append(slices.Clone(objs), live...))
		}
	}
}

func (c *env) reportApplied(ctx context.Context, nc *v1alpha1.NestedCluster, applied []string) {
	if len(applied) == 0 {
		return
	}
	klog.FromContext(ctx).Info("Applied control-plane objects", "objects", applied)
	c.recorder.Eventf(nc, corev1.EventTypeNormal, "Applied", "applied %s", strings.Join(applied, ", "))
}

// applyIfChanged server-side applies obj unless what capn owns of the
// live object already equals it (ownsDesired): a hand edit to a field capn
// owns is reverted on the next sync, fields others own are left alone, and
// an unchanged cluster costs no write. It returns the live (or applied)
// object and whether it wrote. obj gains the hash annotation, which makes
// any change to the rendered object visible on the live one.
func (c *env) applyIfChanged(ctx context.Context, obj builders.Object) (builders.Object, bool, error) {
	hash, err := specHash(obj)
	if err != nil {
		return nil, false, err
	}
	a := maps.Clone(obj.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	a[SpecHashAnnotation] = hash
	obj.SetAnnotations(a)
	live, err := c.mgmt.Get(ctx, obj)
	switch {
	case err == nil:
		same, err := ownsDesired(live, obj)
		if err != nil {
			return nil, false, err
		}
		if same {
			return live, false, nil
		}
	case !apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("getting: %w", err)
	}
	out, err := c.mgmt.Apply(ctx, FieldManager, obj)
	if err != nil {
		return nil, false, fmt.Errorf("applying: %w", err)
	}
	return out, true, nil
}

// specHash is a sha256 of obj as rendered, without the hash annotation;
// json.Marshal sorts map keys, so equal objects hash equally.
func specHash(obj builders.Object) (string, error) {
	if _, ok := obj.GetAnnotations()[SpecHashAnnotation]; ok {
		return "", fmt.Errorf("%s %s: already carries %s", kindOf(obj), obj.GetName(), SpecHashAnnotation)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encoding %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}

func kindOf(o builders.Object) string { return o.GetObjectKind().GroupVersionKind().Kind }

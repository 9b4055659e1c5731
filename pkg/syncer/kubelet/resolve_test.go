package kubelet

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"capn.dev/capn/pkg/tenant/names"
)

func TestResolve(t *testing.T) {
	const otherUID = "11111111-2222-3333-4444-555555555555"
	web := tenantPod("shop", "web", tenantUID, "vnode-1")
	forged := hostPod("shop", "web", tenantUID)
	forged.Annotations[names.TenantNameAnnotation] = "api"
	foreign := hostPod("shop", "web", tenantUID)
	delete(foreign.Labels, "app.kubernetes.io/managed-by")
	bare := hostPod("shop", "web", tenantUID)
	bare.Labels, bare.Annotations = nil, nil

	for _, tc := range []struct {
		name         string
		tenant, host []*corev1.Pod
		ns, pod, uid string
		// want is nil for success, else the apierrors predicate.
		want func(error) bool
	}{
		{name: "the tenant's own pod", ns: "shop", pod: "web"},
		{name: "with its uid", ns: "shop", pod: "web", uid: tenantUID},
		{name: "another uid in the path", ns: "shop", pod: "web", uid: otherUID, want: apierrors.IsNotFound},
		{
			// A hostile tenant names a pod it does not have: there is a
			// host pod at that name (another tenant's would sit in another
			// workload namespace; here even one in its own), but no such
			// tenant pod.
			name: "a pod the tenant does not have", ns: "bank", pod: "vault",
			host: []*corev1.Pod{hostPod("shop", "web", tenantUID), hostPod("bank", "vault", otherUID)},
			want: apierrors.IsNotFound,
		},
		{name: "not bound", tenant: []*corev1.Pod{tenantPod("shop", "web", tenantUID, "")}, ns: "shop", pod: "web", want: apierrors.IsNotFound},
		{name: "no host pod yet", host: []*corev1.Pod{}, ns: "shop", pod: "web", want: apierrors.IsNotFound},
		{
			name: "a host pod with the right name but another uid (an earlier pod's)", ns: "shop", pod: "web",
			host: []*corev1.Pod{hostPod("shop", "web", otherUID)}, want: apierrors.IsNotFound,
		},
		{name: "a host pod recording another name", host: []*corev1.Pod{forged}, ns: "shop", pod: "web", want: apierrors.IsForbidden},
		{name: "a host pod the syncer did not make", host: []*corev1.Pod{foreign}, ns: "shop", pod: "web", want: apierrors.IsForbidden},
		{name: "a host pod with no identity", host: []*corev1.Pod{bare}, ns: "shop", pod: "web", want: apierrors.IsForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := tc.tenant
			if tenant == nil {
				tenant = []*corev1.Pod{web}
			}
			r := resolver(t, tenant, tc.host)
			got, err := r.Resolve(context.Background(), tc.ns, tc.pod, tc.uid)
			if tc.want == nil {
				require.NoError(t, err)
				assert.Equal(t, "web", got.Tenant.Name)
				assert.Equal(t, names.Host("shop", "web"), got.Host.Name)
				assert.Equal(t, workloadNS, got.Host.Namespace)
				return
			}
			require.Error(t, err)
			assert.True(t, tc.want(err), "%v", err)
			assert.NotContains(t, err.Error(), names.Host(tc.ns, tc.pod), "the host pod is never named")
			assert.NotContains(t, err.Error(), workloadNS)
		})
	}
}

func TestResolveGetterError(t *testing.T) {
	boom := errors.New("cache gone")
	r := Resolver{
		WorkloadNamespace: workloadNS,
		Tenant:            lister(t, tenantPod("shop", "web", tenantUID, "n")),
		Host:              func(context.Context, string, string) (*corev1.Pod, error) { return nil, boom },
	}
	_, err := r.Resolve(context.Background(), "shop", "web", "")
	assert.ErrorIs(t, err, boom)
}

func TestHasContainer(t *testing.T) {
	tg := Target{Tenant: tenantPod("shop", "web", tenantUID, "n")}
	assert.True(t, tg.HasContainer("app"))
	assert.True(t, tg.HasContainer("init"))
	assert.False(t, tg.HasContainer("capn-injected"))
}

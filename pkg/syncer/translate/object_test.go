package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/tenant/names"
)

func TestHostCopiesCarryTheTenantIdentity(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "shop", Name: "cfg", UID: "uid-1", Labels: map[string]string{"team": "blue"}}
	cm := HostConfigMap(&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}}, "capn-w")
	assert.Equal(t, names.Host("shop", "cfg"), cm.Name)
	assert.Equal(t, "capn-w", cm.Namespace)
	assert.Equal(t, map[string]string{"k": "v"}, cm.Data)
	id, ok := names.IdentityOf(cm.Labels, cm.Annotations)
	assert.True(t, ok)
	assert.Equal(t, names.Identity{Namespace: "shop", Name: "cfg", UID: "uid-1"}, id)
	assert.NotContains(t, cm.Labels, "team", "tenant labels stay in the tenant")
}

func TestHostSecretIsNeverAServiceAccountToken(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "shop", Name: "tok", UID: "uid-2"}
	sec := HostSecret(&corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeServiceAccountToken}, "capn-w")
	assert.Equal(t, corev1.SecretTypeOpaque, sec.Type, "the host's token controller would take it over")
	sec = HostSecret(&corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeDockerConfigJson}, "capn-w")
	assert.Equal(t, corev1.SecretTypeDockerConfigJson, sec.Type)
}

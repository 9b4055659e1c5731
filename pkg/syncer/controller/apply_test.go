package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestApplyIfChanged(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	cms := client.CoreV1().ConfigMaps(testWorkloads)
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: "cfg", Labels: map[string]string{"a": "1"}},
		Data: map[string]string{"k": "v"}}

	got, did, err := applyIfChanged(ctx, cms, nil, want, configMapFields)
	require.NoError(t, err)
	assert.Equal(t, created, did)
	assert.Equal(t, want.Data, got.Data)
	require.Len(t, client.Actions(), 1)
	assert.Equal(t, "create", client.Actions()[0].GetVerb())

	client.ClearActions()
	_, did, err = applyIfChanged(ctx, cms, got, want.DeepCopy(), configMapFields)
	require.NoError(t, err)
	assert.Equal(t, unchanged, did)
	assert.Empty(t, client.Actions(), "in step: not one request")

	client.ClearActions()
	got.Annotations = map[string]string{"someone": "else"}
	changed := want.DeepCopy()
	changed.Data["k"] = "w"
	got, did, err = applyIfChanged(ctx, cms, got, changed, configMapFields)
	require.NoError(t, err)
	assert.Equal(t, updated, did)
	require.Len(t, client.Actions(), 1)
	assert.Equal(t, "update", client.Actions()[0].GetVerb())
	assert.Equal(t, "w", got.Data["k"])

	client.ClearActions()
	_, _, err = applyIfChanged(ctx, cms, nil, want, configMapFields)
	require.Error(t, err, "a create over an object the cache does not show yet fails, to be retried")
	assert.Contains(t, err.Error(), "not in the cache yet")
}

func TestCachedMapsNotFoundToNil(t *testing.T) {
	cm, err := cached[*corev1.ConfigMap](nil, apierrors.NewNotFound(corev1.Resource("configmaps"), "cfg"))
	require.NoError(t, err)
	assert.Nil(t, cm)
}

package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCopySizes(t *testing.T) {
	assert.Equal(t, int64(3+5+3+2), ConfigMapSize(&corev1.ConfigMap{Data: map[string]string{"key": "value"}, BinaryData: map[string][]byte{"bin": {1, 2}}}))
	assert.Equal(t, int64(1+3+1+1), SecretSize(&corev1.Secret{Data: map[string][]byte{"a": []byte("abc")}, StringData: map[string]string{"b": "c"}}))
	assert.Zero(t, ConfigMapSize(&corev1.ConfigMap{}))
}

func TestCheckCopiedBytes(t *testing.T) {
	cm := func(n string) CopyKey { return CopyKey{Name: n} }
	sec := func(n string) CopyKey { return CopyKey{Secret: true, Name: n} }
	host := Copies{cm("a"): 40, sec("a"): 30} // a ConfigMap and a Secret may share a name
	for _, tc := range []struct {
		name    string
		host    Copies
		want    Copies
		max     int64
		wantErr string
	}{
		{name: "nothing wanted", host: host, max: 70},
		{name: "new copy within the bound", host: host, want: Copies{cm("b"): 30}, max: 100},
		{name: "new copy at the bound", host: host, want: Copies{cm("b"): 30}, max: 100},
		{name: "new copy over the bound", host: host, want: Copies{cm("b"): 31}, max: 100,
			wantErr: "spec: Forbidden: the ConfigMaps and Secrets the pod references would take this cluster's copies on the management cluster to a total of 101, over the provider's bound of 100 (bytes of keys and values)"},
		{name: "a copy already there counts once", host: host, want: Copies{cm("a"): 40, sec("a"): 30}, max: 70},
		{name: "the Secret of the same name is another copy", host: Copies{cm("a"): 40}, want: Copies{sec("a"): 40}, max: 70,
			wantErr: "spec: Forbidden: the ConfigMaps and Secrets the pod references would take this cluster's copies on the management cluster to a total of 80, over the provider's bound of 70 (bytes of keys and values)"},
		{name: "a copy that grew counts at its new size", host: host, want: Copies{cm("a"): 80}, max: 100,
			wantErr: "spec: Forbidden: the ConfigMaps and Secrets the pod references would take this cluster's copies on the management cluster to a total of 110, over the provider's bound of 100 (bytes of keys and values)"},
		{name: "already over a lowered bound, adding nothing", host: host, want: Copies{cm("a"): 40}, max: 10},
		{name: "already over a lowered bound, adding", host: host, want: Copies{cm("c"): 1}, max: 10,
			wantErr: "spec: Forbidden: the ConfigMaps and Secrets the pod references would take this cluster's copies on the management cluster to a total of 71, over the provider's bound of 10 (bytes of keys and values)"},
		{name: "nothing there yet", want: Copies{sec("x"): 64 << 20}, max: 64 << 20},
		{name: "large numbers read as quantities", want: Copies{sec("x"): 65 << 20}, max: 64 << 20,
			wantErr: "spec: Forbidden: the ConfigMaps and Secrets the pod references would take this cluster's copies on the management cluster to a total of 65Mi, over the provider's bound of 64Mi (bytes of keys and values)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCopiedBytes(tc.host, tc.want, *resource.NewQuantity(tc.max, resource.BinarySI), field.NewPath("spec"))
			if tc.wantErr == "" {
				assert.Nil(t, err)
				return
			}
			if assert.NotNil(t, err) {
				assert.Equal(t, tc.wantErr, err.Error())
			}
		})
	}
}

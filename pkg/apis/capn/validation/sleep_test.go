package validation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A sleeping cluster keeps its version: waking in the same update is the
// way to upgrade it; sleeping and waking leave the version alone.
func TestVersionCannotChangeWhileAsleep(t *testing.T) {
	cases := []struct {
		name                 string
		oldAsleep, newAsleep bool
		version              string
		forbidden            bool
	}{
		{"asleep, upgrade", true, true, "v1.37.2", true},
		{"fall asleep and upgrade at once", false, true, "v1.37.2", true},
		{"wake and upgrade at once", true, false, "v1.37.2", false},
		{"awake, upgrade", false, false, "v1.37.2", false},
		{"fall asleep", false, true, "v1.36.3", false},
		{"wake", true, false, "v1.36.3", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validNC(t)
			old.ResourceVersion = "1"
			old.Spec.Version = "v1.36.3"
			old.Spec.Sleep.Asleep = tc.oldAsleep
			nc := old.DeepCopy()
			nc.Spec.Version = tc.version
			nc.Spec.Sleep.Asleep = tc.newAsleep
			errs := ValidateNestedClusterUpdate(nc, old)
			if !tc.forbidden {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, "%v", errs)
			assert.Equal(t, "spec.version", errs[0].Field)
			assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
		})
	}
}

func TestAfterInactivityHasAFloor(t *testing.T) {
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{{29 * time.Second, false}, {0, false}, {-time.Minute, false}, {30 * time.Second, true}, {30 * time.Minute, true}} {
		nc := validNC(t)
		nc.Spec.Sleep.AfterInactivity = &metav1.Duration{Duration: tc.d}
		errs := ValidateNestedCluster(nc)
		if tc.ok {
			assert.Empty(t, errs, tc.d)
			continue
		}
		require.Len(t, errs, 1, "%s: %v", tc.d, errs)
		assert.Equal(t, "spec.sleep.afterInactivity", errs[0].Field)
		assert.Equal(t, field.ErrorTypeInvalid, errs[0].Type)
	}
}

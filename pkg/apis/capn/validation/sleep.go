package validation

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
)

// MinAfterInactivity is the shortest spec.sleep.afterInactivity: shorter,
// and a cluster would fall asleep between a user's commands.
const MinAfterInactivity = 30 * time.Second

func validateSleep(s *capn.SleepSpec, fldPath *field.Path) field.ErrorList {
	if s.AfterInactivity == nil {
		return nil
	}
	if d := s.AfterInactivity.Duration; d < MinAfterInactivity {
		return field.ErrorList{field.Invalid(fldPath.Child("afterInactivity"), d.String(),
			"must be at least "+MinAfterInactivity.String())}
	}
	return nil
}

package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/install"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

var testScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// validNC is what a user who wrote only a name gets after the real
// defaulting and conversion the apiserver runs; building it by hand would
// let the tests and the defaults drift apart.
func validNC(t testing.TB) *capn.NestedCluster {
	t.Helper()
	ext := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{
		Name: "tenant-a", Namespace: "team-a", ResourceVersion: "1",
	}}
	testScheme.Default(ext)
	out := &capn.NestedCluster{}
	if err := testScheme.Convert(ext, out, nil); err != nil {
		t.Fatalf("convert: %v", err)
	}
	return out
}

// wantErr is the one error a case must produce; detail, when set, must be a
// substring of that error's detail.
type wantErr struct {
	path   string
	typ    field.ErrorType
	detail string
}

func expectError(t *testing.T, errs field.ErrorList, want wantErr) {
	t.Helper()
	for _, e := range errs {
		if e.Field == want.path && e.Type == want.typ && strings.Contains(e.Detail, want.detail) {
			return
		}
	}
	t.Errorf("want %s error at %q (detail ~ %q), got:\n%s", want.typ, want.path, want.detail, dump(errs))
}

func expectNoErrors(t *testing.T, errs field.ErrorList) {
	t.Helper()
	if len(errs) > 0 {
		t.Errorf("want no errors, got:\n%s", dump(errs))
	}
}

func dump(errs field.ErrorList) string {
	if len(errs) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("  " + e.Error() + "\n")
	}
	return b.String()
}

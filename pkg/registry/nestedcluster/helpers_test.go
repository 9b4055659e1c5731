package nestedcluster_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/apiserver"
	"capn.dev/capn/pkg/etcd"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

// One embedded etcd serves the whole test binary; it starts on first use so
// that the pure unit tests (strategy, table) do not wait for it. Every test
// works in its own namespace, so tests cannot see each other's objects.
var (
	etcdOnce   sync.Once
	etcdServer *etcd.Embedded
	etcdDir    string
	etcdErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if etcdServer != nil {
		etcdServer.Stop()
	}
	if etcdDir != "" {
		_ = os.RemoveAll(etcdDir)
	}
	os.Exit(code)
}

func etcdURL(t *testing.T) string {
	t.Helper()
	etcdOnce.Do(func() {
		etcdDir, etcdErr = os.MkdirTemp("", "capn-registry-etcd-")
		if etcdErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		etcdServer, etcdErr = etcd.Start(ctx, etcdDir)
	})
	if etcdErr != nil {
		t.Fatalf("starting embedded etcd: %v", etcdErr)
	}
	return etcdServer.ClientURL
}

// newStorage builds the real nestedclusters storage on the shared etcd,
// encoding as v1alpha1 like capn-apiserver does.
func newStorage(t *testing.T) nestedcluster.Storage {
	t.Helper()
	cfg := storagebackend.NewDefaultConfig("/registry-test", apiserver.Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion))
	cfg.Transport.ServerList = []string{etcdURL(t)}
	opts := generic.RESTOptions{
		StorageConfig:           cfg.ForResource(capn.Resource("nestedclusters")),
		Decorator:               generic.UndecoratedStorage,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          "capn.dev/nestedclusters",
	}
	s, err := nestedcluster.NewStorage(apiserver.Scheme, opts, testPolicy)
	if err != nil {
		t.Fatalf("NewStorage: %v", err)
	}
	t.Cleanup(s.NestedCluster.Destroy)
	return s
}

var nonDNS = regexp.MustCompile(`[^a-z0-9]+`)

var nsCounter atomic.Int64

// testNamespace is a DNS label unique to the (sub)test and to this run of
// it, so -count=N against the one etcd starts from an empty namespace.
func testNamespace(t *testing.T) string {
	ns := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(ns) > 50 {
		ns = strings.TrimRight(ns[:50], "-")
	}
	return fmt.Sprintf("%s-%d", ns, nsCounter.Add(1))
}

// tenant is who the tests act as unless they say otherwise.
var tenant = &user.DefaultInfo{Name: "tenant-user", Groups: []string{user.AllAuthenticated}}

// unreadableSecret is the one Secret testPolicy's authorizer denies;
// forbiddenPool the one NestedEtcdPool it denies "use" of.
const (
	unreadableSecret = "not-yours"
	forbiddenPool    = "providers-only"
	// unrestorableBackup is the NestedClusterBackup whose "restore" is
	// denied; backups holds the ones testPolicy's Backup finds.
	unrestorableBackup = "someone-elses-backup"
)

var backups = map[string]capn.BackupPhase{
	"completed": capn.BackupCompleted, "pending": capn.BackupPending, "failed": capn.BackupFailed, unrestorableBackup: capn.BackupCompleted,
}

// testPolicy stands in for the management cluster's RBAC: every user may
// get every Secret, but only system:masters may get unreadableSecret.
var testPolicy = nestedcluster.Policy{
	Authorizer: authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		masters := slices.Contains(a.GetUser().GetGroups(), user.SystemPrivilegedGroup)
		if a.GetResource() == "secrets" && a.GetName() == unreadableSecret && !masters {
			return authorizer.DecisionDeny, "", nil
		}
		if a.GetAPIGroup() == "capn.dev" && a.GetResource() == "nestedetcdpools" && a.GetVerb() == "use" && a.GetName() == forbiddenPool && !masters {
			return authorizer.DecisionDeny, "", nil
		}
		if a.GetAPIGroup() == "capn.dev" && a.GetResource() == "nestedclusterbackups" && a.GetVerb() == "restore" && a.GetName() == unrestorableBackup && !masters {
			return authorizer.DecisionDeny, "", nil
		}
		return authorizer.DecisionAllow, "", nil
	}),
	FinalizerAdminGroups: nestedcluster.DefaultFinalizerAdminGroups,
	Backup: func(_ context.Context, namespace, name string) (*capn.NestedClusterBackup, error) {
		phase, ok := backups[name]
		if !ok {
			return nil, apierrors.NewNotFound(capn.Resource("nestedclusterbackups"), name)
		}
		return &capn.NestedClusterBackup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Status: capn.NestedClusterBackupStatus{Phase: phase}}, nil
	},
}

func nsContext(ns string) context.Context {
	return asUser(genericapirequest.WithNamespace(genericapirequest.NewContext(), ns), tenant)
}

func asUser(ctx context.Context, u user.Info) context.Context {
	return genericapirequest.WithUser(ctx, u)
}

// newCluster is what a user who wrote only a name (and optionally a
// version) gets after the scheme's real defaulting and conversion.
func newCluster(t testing.TB, ns, name, version string) *capn.NestedCluster {
	t.Helper()
	ext := &v1alpha1.NestedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.NestedClusterSpec{Version: version},
	}
	apiserver.Scheme.Default(ext)
	out := &capn.NestedCluster{}
	if err := apiserver.Scheme.Convert(ext, out, nil); err != nil {
		t.Fatalf("convert: %v", err)
	}
	return out
}

// causeFields lists the field paths of an API error's causes.
func causeFields(err error) []string {
	var fields []string
	if se, ok := err.(apierrors.APIStatus); ok && se.Status().Details != nil {
		for _, c := range se.Status().Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	return fields
}

func expectInvalidAt(t *testing.T, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want Invalid error, got %T: %v", err, err)
	}
	for _, f := range causeFields(err) {
		if f == field {
			return
		}
	}
	t.Fatalf("want Invalid error at %q, got causes at %v: %v", field, causeFields(err), err)
}

func int32Ptr(i int32) *int32 { return &i }

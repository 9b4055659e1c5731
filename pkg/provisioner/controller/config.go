package controller

import (
	"time"

	"k8s.io/client-go/rest"

	"capn.dev/capn/pkg/backup"
	"capn.dev/capn/pkg/provisioner/builders"
)

// DefaultUpgradeStepTimeout is Settings.UpgradeStepTimeout's default: long
// enough for an image pull on a slow node, short enough that a stuck
// upgrade is reported the same hour.
const DefaultUpgradeStepTimeout = 10 * time.Minute

// Settings are the provisioner's settings. capn-apiserver fills them once
// from its flags and hands them to Start, which hands them to every loop as
// is: a setting has one name from the flag to its use.
type Settings struct {
	// LeaderElect elects one provisioning replica via Lease
	// LeaderElectNamespace/LeaseName in the management cluster.
	LeaderElect bool
	// LeaderElectNamespace is also capn's own namespace, where
	// capn-apiserver runs (builders.Params.CapnNamespace).
	LeaderElectNamespace string
	// CertRenewalThreshold renews a certificate this long before expiry
	// (pki.Reconcile).
	CertRenewalThreshold time.Duration
	// UpgradeStepTimeout is how long one component may take to roll out
	// during an upgrade before it halts as Degraded.
	UpgradeStepTimeout time.Duration
	// ActivityInterval is how often a tenant with
	// spec.sleep.afterInactivity is checked for requests.
	ActivityInterval time.Duration
	// TemplateRevision is the pod-template revision new control-plane
	// workloads get (builders.Params.TemplateRevision); 0 means the latest.
	TemplateRevision int
	// Workers is the clusters loop's sync concurrency.
	Workers int
	// OrphanSweep deletes management namespaces whose owner is gone, as
	// Sweep says.
	OrphanSweep bool
	Sweep       SweepConfig
}

// Complete fills what was left zero with its default. Start calls it, so
// Settings from a test or a caller that sets only what it cares about
// behave like those from the flags.
func (c Settings) Complete() Settings {
	orDefault(&c.UpgradeStepTimeout, DefaultUpgradeStepTimeout)
	orDefault(&c.ActivityInterval, DefaultActivityInterval)
	orDefault(&c.Sweep.GracePeriod, DefaultOrphanGracePeriod)
	orDefault(&c.Sweep.Period, DefaultOrphanSweepPeriod)
	orDefault(&c.Sweep.MaxDeletions, DefaultOrphanMaxDeletions)
	c.Workers = max(c.Workers, 1)
	return c
}

// orDefault sets *v to def unless it is positive: no setting here has a
// meaningful zero or negative value.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Deps are what Start needs beside its settings: how to reach the
// clusters, and the provider's collaborators.
type Deps struct {
	// Capn reaches capn-apiserver itself (the loopback config).
	Capn *rest.Config
	// Management reaches the cluster the control planes run in.
	Management *rest.Config
	// Events reaches the cluster that serves the NestedClusters' namespaces
	// (the aggregating kube-apiserver); nil means Management.
	Events *rest.Config
	// Placement schedules every control-plane pod (provider-owned).
	Placement builders.Placement
	// DataPlane is the provider's side of Shared data planes.
	DataPlane builders.DataPlane
	// Network is what control-plane pods may reach (builders.Network).
	Network builders.Network
	// Health is served as /livez/capn-provisioner; nil means none.
	Health *Health
	// BackupStore keeps NestedClusterBackups' data; nil fails every backup.
	BackupStore backup.Store
}

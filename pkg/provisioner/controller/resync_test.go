package controller

import (
	"testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// TestResyncWritesNothing is the controller's main promise: once a cluster
// is Ready, a resync reads but never writes, to either cluster.
func TestResyncWritesNothing(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync() // finalizer, namespace, services, PKI, workloads, status
	if len(f.mgmt.writes) == 0 {
		t.Fatal("first sync wrote nothing")
	}

	// Not ready yet: a second pass on the same state still writes nothing.
	f.mgmt.reset()
	f.capn.ClearActions()
	f.events()
	f.sync()
	if len(f.mgmt.writes) != 0 || f.capnWrites() != 0 {
		t.Errorf("second sync of unchanged Provisioning cluster wrote: mgmt %v, capn %d", f.mgmt.writes, f.capnWrites())
	}

	f.markReady()
	f.syncTenant() // status becomes Ready
	if f.nc.Status.Phase != v1alpha1.PhaseReady {
		t.Fatalf("phase %q, want Ready", f.nc.Status.Phase)
	}
	f.mgmt.reset()
	f.capn.ClearActions()
	f.events()
	if after := f.sync(); after != 0 {
		t.Errorf("a Ready cluster is requeued after %s; want only events and resyncs", after)
	}
	if len(f.mgmt.writes) != 0 {
		t.Errorf("resync of a Ready cluster wrote to the management cluster: %v", f.mgmt.writes)
	}
	if n := f.capnWrites(); n != 0 {
		t.Errorf("resync of a Ready cluster wrote %d times to capn: %v", n, f.capn.Actions())
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("resync of a Ready cluster recorded events: %v", ev)
	}
	if len(f.mgmt.reads) == 0 {
		t.Error("resync read nothing: it cannot have checked for drift")
	}
}

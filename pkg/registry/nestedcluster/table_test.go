package nestedcluster_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/registry/nestedcluster"
)

func tableCluster(t *testing.T, name string) *capn.NestedCluster {
	nc := newCluster(t, "team-a", name, "v1.37.2")
	nc.ResourceVersion = "42"
	nc.CreationTimestamp = metav1.NewTime(time.Now().Add(-10 * 24 * time.Hour))
	nc.Spec.APIServer.Replicas = int32Ptr(3)
	nc.Spec.ControllerManager.Replicas = int32Ptr(2)
	nc.Spec.Etcd.Managed.Replicas = int32Ptr(3)
	nc.Status = capn.NestedClusterStatus{
		Phase:             capn.PhaseReady,
		Endpoint:          "https://" + name + ".example:6443",
		APIServer:         capn.ComponentStatus{Replicas: 3, ReadyReplicas: 2},
		ControllerManager: capn.ComponentStatus{Replicas: 2, ReadyReplicas: 2},
		Scheduler:         capn.ComponentStatus{Replicas: 1, ReadyReplicas: 0},
		Etcd:              capn.ComponentStatus{Replicas: 3, ReadyReplicas: 3},
	}
	return nc
}

func TestTableColumns(t *testing.T) {
	table, err := nestedcluster.TableConvertor.ConvertToTable(context.Background(), tableCluster(t, "tenant-a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name     string
		priority int32
	}{
		{"Name", 0}, {"Version", 0}, {"Phase", 0}, {"APIServers", 0}, {"Endpoint", 0}, {"Age", 0},
		{"Controller-Managers", 1}, {"Schedulers", 1}, {"Etcd", 1}, {"Reason", 1},
	}
	if len(table.ColumnDefinitions) != len(want) {
		t.Fatalf("got %d columns, want %d: %+v", len(table.ColumnDefinitions), len(want), table.ColumnDefinitions)
	}
	for i, w := range want {
		c := table.ColumnDefinitions[i]
		if c.Name != w.name || c.Priority != w.priority {
			t.Errorf("column %d = %q (priority %d), want %q (priority %d)", i, c.Name, c.Priority, w.name, w.priority)
		}
		if c.Type != "string" || c.Description == "" {
			t.Errorf("column %q: type %q, description %q; want a described string column", c.Name, c.Type, c.Description)
		}
	}
	if table.ColumnDefinitions[0].Format != "name" {
		t.Errorf("Name column format = %q, want name", table.ColumnDefinitions[0].Format)
	}
	for i, row := range table.Rows {
		if len(row.Cells) != len(want) {
			t.Errorf("row %d has %d cells, want one per column (%d)", i, len(row.Cells), len(want))
		}
	}
}

func TestTableRow(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*capn.NestedCluster)
		want   []interface{}
	}{
		{
			name: "ready cluster",
			want: []interface{}{"tenant-a", "v1.37.2", "Ready", "2/3", "https://tenant-a.example:6443", "10d", "2/2", "0/1", "3/3", ""},
		},
		{
			name: "deleting overrides the reported phase",
			mutate: func(nc *capn.NestedCluster) {
				now := metav1.Now()
				nc.DeletionTimestamp = &now
			},
			want: []interface{}{"tenant-a", "v1.37.2", "Deleting", "2/3", "https://tenant-a.example:6443", "10d", "2/2", "0/1", "3/3", ""},
		},
		{
			name: "external etcd",
			mutate: func(nc *capn.NestedCluster) {
				nc.Spec.Etcd = capn.EtcdSpec{External: &capn.ExternalEtcd{Endpoints: []string{"https://etcd:2379"}}}
			},
			want: []interface{}{"tenant-a", "v1.37.2", "Ready", "2/3", "https://tenant-a.example:6443", "10d", "2/2", "0/1", "External", ""},
		},
		{
			name: "a missing image is the reason, ahead of Degraded and Ready",
			mutate: func(nc *capn.NestedCluster) {
				nc.Status.Conditions = []metav1.Condition{
					{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonImagePullFailed},
					{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "UpgradeStalled"},
					{Type: v1alpha1.ConditionImagesAvailable, Status: metav1.ConditionFalse, Reason: "ErrImageNeverPull"},
				}
			},
			want: []interface{}{"tenant-a", "v1.37.2", "Ready", "2/3", "https://tenant-a.example:6443", "10d", "2/2", "0/1", "3/3", "ErrImageNeverPull"},
		},
		{
			name: "a stalled upgrade is the reason when images are present",
			mutate: func(nc *capn.NestedCluster) {
				nc.Status.Conditions = []metav1.Condition{
					{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Upgrading"},
					{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "UpgradeStalled"},
					{Type: v1alpha1.ConditionImagesAvailable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonImagesPresent},
				}
			},
			want: []interface{}{"tenant-a", "v1.37.2", "Ready", "2/3", "https://tenant-a.example:6443", "10d", "2/2", "0/1", "3/3", "UpgradeStalled"},
		},
		{
			name: "otherwise Ready's reason while it is not True",
			mutate: func(nc *capn.NestedCluster) {
				nc.Status.Conditions = []metav1.Condition{
					{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "EtcdUnavailable"},
					{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "AsExpected"},
				}
			},
			want: []interface{}{"tenant-a", "v1.37.2", "Ready", "2/3", "https://tenant-a.example:6443", "10d", "2/2", "0/1", "3/3", "EtcdUnavailable"},
		},
		{
			name: "fresh cluster without status or creation time",
			mutate: func(nc *capn.NestedCluster) {
				nc.Status = capn.NestedClusterStatus{}
				nc.CreationTimestamp = metav1.Time{}
				nc.Spec.APIServer.Replicas = nil
			},
			want: []interface{}{"tenant-a", "v1.37.2", "", "0/0", "", "<unknown>", "0/2", "0/1", "0/3", ""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := tableCluster(t, "tenant-a")
			nc.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Available"}}
			if tc.mutate != nil {
				tc.mutate(nc)
			}
			table, err := nestedcluster.TableConvertor.ConvertToTable(context.Background(), nc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if table.ResourceVersion != "42" {
				t.Errorf("table resourceVersion = %q, want the object's 42", table.ResourceVersion)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(table.Rows))
			}
			row := table.Rows[0]
			if len(row.Cells) != len(tc.want) {
				t.Fatalf("cells = %v, want %v", row.Cells, tc.want)
			}
			for i := range tc.want {
				if row.Cells[i] != tc.want[i] {
					t.Errorf("cell %d (%s) = %#v, want %#v", i, table.ColumnDefinitions[i].Name, row.Cells[i], tc.want[i])
				}
			}
			if got, ok := row.Object.Object.(*capn.NestedCluster); !ok || got.Name != "tenant-a" {
				t.Errorf("row object = %#v, want the NestedCluster", row.Object.Object)
			}
		})
	}
}

func TestTableList(t *testing.T) {
	remaining := int64(7)
	list := &capn.NestedClusterList{
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "next-page", RemainingItemCount: &remaining},
		Items:    []capn.NestedCluster{*tableCluster(t, "tenant-a"), *tableCluster(t, "tenant-b")},
	}
	table, err := nestedcluster.TableConvertor.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if table.ResourceVersion != "99" || table.Continue != "next-page" || table.RemainingItemCount == nil || *table.RemainingItemCount != 7 {
		t.Errorf("list meta not carried over: rv %q continue %q remaining %v", table.ResourceVersion, table.Continue, table.RemainingItemCount)
	}
	if len(table.Rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(table.Rows))
	}
	for i, name := range []string{"tenant-a", "tenant-b"} {
		if table.Rows[i].Cells[0] != name {
			t.Errorf("row %d name = %v, want %s", i, table.Rows[i].Cells[0], name)
		}
		if table.Rows[i].Cells[4] != "https://"+name+".example:6443" {
			t.Errorf("row %d endpoint = %v", i, table.Rows[i].Cells[4])
		}
		// Each row must point at its own item, not a shared loop variable.
		if got := table.Rows[i].Object.Object.(*capn.NestedCluster).Name; got != name {
			t.Errorf("row %d object is %s, want %s", i, got, name)
		}
	}

	empty, err := nestedcluster.TableConvertor.ConvertToTable(context.Background(), &capn.NestedClusterList{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(empty.Rows) != 0 || len(empty.ColumnDefinitions) != 10 {
		t.Errorf("empty list: %d rows, %d columns; want 0 rows and all columns", len(empty.Rows), len(empty.ColumnDefinitions))
	}
}

func TestTableUnknownType(t *testing.T) {
	if _, err := nestedcluster.TableConvertor.ConvertToTable(context.Background(), &capn.NestedClusterUpgrade{}, nil); err == nil {
		t.Error("converting a NestedClusterUpgrade to a table should fail")
	}
}

package capn

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedClusterBackup is a consistent copy of one NestedCluster's etcd
// data, taken once when the backup is created and kept by the provider's
// backup store until the backup is deleted. It outlives its cluster: a new
// NestedCluster restores from it with spec.restoreFrom.
type NestedClusterBackup struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the cluster to back up. Immutable.
	Spec NestedClusterBackupSpec `json:"spec"`
	// status is how the backup went. Read-only.
	// +optional
	Status NestedClusterBackupStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NestedClusterBackupList is a list of NestedClusterBackups.
type NestedClusterBackupList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []NestedClusterBackup `json:"items"`
}

// NestedClusterBackupSpec is what to back up.
type NestedClusterBackupSpec struct {
	// clusterName is a NestedCluster in the backup's namespace, with a
	// managed etcd or a pool (an external etcd is backed up where it
	// runs).
	ClusterName string `json:"clusterName"`
}

// BackupPhase is where a backup is in its one run.
// +enum
type BackupPhase string

const (
	// BackupPending: not taken yet (the cluster's etcd is not ready, or
	// capn is taking it).
	BackupPending BackupPhase = "Pending"
	// BackupCompleted: the data is in the store; restores may use it.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed: it will not be taken; message says why. Delete it and
	// create another.
	BackupFailed BackupPhase = "Failed"
)

// NestedClusterBackupStatus describes a backup.
type NestedClusterBackupStatus struct {
	// phase is Pending, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// message says why a backup is Pending or Failed.
	// +optional
	Message string `json:"message,omitempty"`
	// clusterUID is the UID of the cluster backed up: a cluster deleted and
	// created again under the same name is another cluster.
	// +optional
	ClusterUID types.UID `json:"clusterUID,omitempty"`
	// revision is the etcd revision every key was read at.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// keys is how many etcd keys the backup holds.
	// +optional
	Keys int64 `json:"keys,omitempty"`
	// sizeBytes is the backup's size in the store.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// completionTime is when the backup was stored.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

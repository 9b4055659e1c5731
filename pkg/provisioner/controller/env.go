package controller

import (
	"time"

	"k8s.io/client-go/tools/record"

	"capn.dev/capn/pkg/generated/clientset/versioned"
)

// env is what every loop and every sync operation reaches: the two
// clusters, Events, the clock and the settings. Its methods are the write
// primitives the operations share (applyIfChanged, writeStatus and the
// Events that go with them); everything an operation keeps of its own
// lives in the operation's type.
type env struct {
	capn     versioned.Interface
	mgmt     Management
	recorder record.EventRecorder
	now      func() time.Time
	cfg      Settings
}

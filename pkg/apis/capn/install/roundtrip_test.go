package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	capnfuzzer "capn.dev/capn/pkg/apis/capn/fuzzer"
)

// The group has no protobuf encoding, so only the JSON (and, through the
// codec factory, YAML) round trips apply.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, capnfuzzer.Funcs)
}

// Package requestmetrics counts the requests a client sends, by API verb
// and resource, at its transport: what the apiserver saw, whichever code
// path (cache, informers, leases, retries) sent it. The provisioner and
// capn-syncer both count their management-cluster traffic with it.
package requestmetrics

import (
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-base/metrics"
)

// requestInfo classifies a request the way the apiserver will: get, list
// and watch are all GETs on the wire.
var requestInfo = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Count counts each request sent through rt in c, labelled (verb,
// resource), a failed one included: it was still traffic the apiserver
// may have served.
func Count(c *metrics.CounterVec, rt http.RoundTripper) http.RoundTripper {
	return &counter{c: c, rt: rt}
}

// counter is a RoundTripperWrapper so that client-go finds the transport
// beneath to cancel a timed-out request (else it logs "unable to cancel
// request" and leaves it running).
type counter struct {
	c  *metrics.CounterVec
	rt http.RoundTripper
}

func (t *counter) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, resource := "unknown", ""
	if info, err := requestInfo.NewRequestInfo(req); err == nil && info.IsResourceRequest {
		verb, resource = info.Verb, info.Resource
	}
	t.c.WithLabelValues(verb, resource).Inc()
	return t.rt.RoundTrip(req)
}

func (t *counter) WrappedRoundTripper() http.RoundTripper { return t.rt }

var _ utilnet.RoundTripperWrapper = &counter{}

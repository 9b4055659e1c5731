// Package requestmetrics counts the requests a client sends, by API verb
// and resource, at its transport: what the apiserver saw, whichever code
// path (cache, informers, leases, retries) sent it. The provisioner and
// capn-syncer both count their management-cluster traffic with it.
package requestmetrics

import (
	"net/http"

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
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		verb, resource := "unknown", ""
		if info, err := requestInfo.NewRequestInfo(req); err == nil && info.IsResourceRequest {
			verb, resource = info.Verb, info.Resource
		}
		c.WithLabelValues(verb, resource).Inc()
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

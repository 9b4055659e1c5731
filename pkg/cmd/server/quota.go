package server

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"capn.dev/capn/pkg/apis/capn"
)

// enableResourceQuota puts k8s.io/apiserver's own ResourceQuota admission
// plugin into capn's chain, so a provider caps NestedClusters per namespace
// the Kubernetes way: a ResourceQuota in the tenant's namespace with
// count/nestedclusters.capn.dev. The management cluster's
// kube-controller-manager keeps the quota's usage (it discovers capn's
// resources through the aggregator); this plugin charges each create
// against it and refuses one over the limit with 403 Forbidden.
func enableResourceQuota(r *genericoptions.RecommendedOptions) {
	resourcequota.Register(r.Admission.Plugins)
	r.Admission.RecommendedPluginOrder = append(r.Admission.RecommendedPluginOrder, resourcequota.PluginName)
	previous := r.ExtraAdmissionInitializers
	r.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		out, err := previous(c)
		if err != nil {
			return nil, err
		}
		return append(out, quotaInitializer{quotaConfiguration()}), nil
	}
}

// quotaConfiguration knows one resource: NestedClusters, counted. Only
// admission uses it; usage is recomputed by kube-controller-manager, so the
// evaluator never lists.
func quotaConfiguration() quota.Configuration {
	noList := func(string) ([]runtime.Object, error) {
		return nil, errors.New("capn-apiserver does not recompute quota usage: kube-controller-manager does")
	}
	return generic.NewConfiguration(
		[]quota.Evaluator{generic.NewObjectCountEvaluator(capn.Resource("nestedclusters"), noList, "")},
		map[schema.GroupResource]struct{}{})
}

// quotaInitializer hands the quota configuration to the plugin, the part
// kube-apiserver's own initializer would supply.
type quotaInitializer struct{ config quota.Configuration }

func (q quotaInitializer) Initialize(p admission.Interface) {
	if w, ok := p.(initializer.WantsQuotaConfiguration); ok {
		w.SetQuotaConfiguration(q.config)
	}
}

// Package apiserver assembles capn-apiserver: the scheme, the capn.dev API
// group and its storage on top of a generic API server.
package apiserver

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	scalescheme "k8s.io/client-go/scale/scheme"
	scaleautoscalingv1 "k8s.io/client-go/scale/scheme/autoscalingv1"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/install"
	"capn.dev/capn/pkg/registry/nestedcluster"
	"capn.dev/capn/pkg/registry/nestedclusterbackup"
	"capn.dev/capn/pkg/registry/nestedetcdpool"
)

var (
	// Scheme knows the capn.dev types and autoscaling/v1 Scale, which the
	// /scale subresource speaks.
	Scheme = runtime.NewScheme()
	// Codecs serialises objects of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// NegotiatedSerializer is what capn-apiserver serves: Codecs without
	// protobuf, which the capn.dev types do not implement. Were protobuf
	// offered, clients that prefer it (kube-controller-manager's metadata
	// client: the namespace deleter, the garbage collector) would get it
	// chosen for NestedCluster lists and fail to encode ("does not implement
	// the protobuf marshalling interface"), so no namespace of the cluster
	// could finish deleting. Without it they fall back to JSON, as for CRDs.
	NegotiatedSerializer runtime.NegotiatedSerializer = withoutProtobuf{Codecs}
)

// withoutProtobuf hides the protobuf serializer of a CodecFactory.
type withoutProtobuf struct{ serializer.CodecFactory }

func (w withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range w.CodecFactory.SupportedMediaTypes() {
		if info.MediaType != runtime.ContentTypeProtobuf {
			out = append(out, info)
		}
	}
	return out
}

func init() {
	install.Install(Scheme)
	utilruntime.Must(scalescheme.AddToScheme(Scheme))
	utilruntime.Must(scaleautoscalingv1.AddToScheme(Scheme))

	// The generic server decodes options (ListOptions, DeleteOptions...) in
	// the unversioned meta group.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}

// Config is the complete configuration of capn-apiserver.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	// PostStartHooks are added to the server by name, e.g. the
	// provisioner controller when --provisioner is not "none".
	PostStartHooks map[string]genericapiserver.PostStartHookFunc
	// KubeconfigIssuer, when set, serves nestedclusters/kubeconfig with
	// certificates of at most MaxKubeconfigExpiration.
	KubeconfigIssuer        nestedcluster.KubeconfigIssuer
	MaxKubeconfigExpiration time.Duration
	// JoinTokenIssuer, when set, serves nestedclusters/jointoken with
	// bootstrap tokens of at most MaxJoinTokenTTL.
	JoinTokenIssuer nestedcluster.JoinTokenIssuer
	MaxJoinTokenTTL time.Duration
	// FinalizerAdminGroups may remove capn's finalizer besides capn itself.
	FinalizerAdminGroups []string
	// DataPlane is the provider's side of spec.dataPlane and spec.syncer.
	DataPlane nestedcluster.DataPlanePolicy
	// DefaultSleepAfterInactivity, when not zero, is spec.sleep.
	// afterInactivity of a NestedCluster created without a sleep setting.
	DefaultSleepAfterInactivity time.Duration
	// LivezChecks are added to /livez (the provisioner's).
	LivezChecks []healthz.HealthChecker
}

// CompletedConfig can only be made by Complete.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	GenericConfig           genericapiserver.CompletedConfig
	PostStartHooks          map[string]genericapiserver.PostStartHookFunc
	KubeconfigIssuer        nestedcluster.KubeconfigIssuer
	MaxKubeconfigExpiration time.Duration
	JoinTokenIssuer         nestedcluster.JoinTokenIssuer
	MaxJoinTokenTTL         time.Duration
	FinalizerAdminGroups    []string
	LivezChecks             []healthz.HealthChecker
	DataPlane               nestedcluster.DataPlanePolicy
	DefaultSleep            time.Duration
}

// Complete fills in defaults; it mutates the receiver.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{GenericConfig: c.GenericConfig.Complete(), PostStartHooks: c.PostStartHooks,
		KubeconfigIssuer: c.KubeconfigIssuer, MaxKubeconfigExpiration: c.MaxKubeconfigExpiration,
		JoinTokenIssuer: c.JoinTokenIssuer, MaxJoinTokenTTL: c.MaxJoinTokenTTL,
		FinalizerAdminGroups: c.FinalizerAdminGroups, LivezChecks: c.LivezChecks, DataPlane: c.DataPlane,
		DefaultSleep: c.DefaultSleepAfterInactivity}}
}

// Server is a running capn-apiserver.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New installs the capn.dev group into a new generic server.
func (c completedConfig) New() (*Server, error) {
	generic, err := c.GenericConfig.New("capn-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	backups, err := nestedclusterbackup.NewStorage(Scheme, c.GenericConfig.RESTOptionsGetter, c.FinalizerAdminGroups)
	if err != nil {
		return nil, err
	}
	store, err := nestedcluster.NewStorage(Scheme, c.GenericConfig.RESTOptionsGetter, nestedcluster.Policy{
		Authorizer:                  c.GenericConfig.Authorization.Authorizer,
		FinalizerAdminGroups:        c.FinalizerAdminGroups,
		DataPlane:                   c.DataPlane,
		DefaultSleepAfterInactivity: c.DefaultSleep,
		Backup: func(ctx context.Context, namespace, name string) (*capn.NestedClusterBackup, error) {
			obj, err := backups.Backup.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return obj.(*capn.NestedClusterBackup), nil
		},
	})
	if err != nil {
		return nil, err
	}
	pools, err := nestedetcdpool.NewStorage(Scheme, c.GenericConfig.RESTOptionsGetter, c.GenericConfig.Authorization.Authorizer)
	if err != nil {
		return nil, err
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(capn.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.NegotiatedSerializer = NegotiatedSerializer
	group.VersionedResourcesStorageMap["v1alpha1"] = map[string]rest.Storage{
		"nestedclusters":              store.NestedCluster,
		"nestedclusters/status":       store.Status,
		"nestedclusters/scale":        store.Scale,
		"nestedclusters/upgrade":      store.Upgrade,
		"nestedetcdpools":             pools.Pool,
		"nestedetcdpools/status":      pools.Status,
		"nestedclusterbackups":        backups.Backup,
		"nestedclusterbackups/status": backups.Status,
	}
	if c.KubeconfigIssuer != nil {
		group.VersionedResourcesStorageMap["v1alpha1"]["nestedclusters/kubeconfig"] =
			nestedcluster.NewKubeconfigREST(store, c.KubeconfigIssuer, c.MaxKubeconfigExpiration)
	}
	if c.JoinTokenIssuer != nil {
		group.VersionedResourcesStorageMap["v1alpha1"]["nestedclusters/jointoken"] =
			nestedcluster.NewJoinTokenREST(store, c.JoinTokenIssuer, c.MaxJoinTokenTTL)
	}
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	if err := generic.AddLivezChecks(0, c.LivezChecks...); err != nil {
		return nil, err
	}
	for name, hook := range c.PostStartHooks {
		if err := generic.AddPostStartHook(name, hook); err != nil {
			return nil, err
		}
	}
	return &Server{GenericAPIServer: generic}, nil
}

package server

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"capn.dev/capn/pkg/apiserver"
	"capn.dev/capn/pkg/backup"
	capnopenapi "capn.dev/capn/pkg/generated/openapi"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/controller"
	"capn.dev/capn/pkg/provisioner/waker"
)

// Config turns validated options into the server's configuration. etcdURL
// is the embedded etcd's address when one was started, else empty.
func (o *Options) Config(etcdURL string) (*apiserver.Config, error) {
	r := o.Recommended
	if etcdURL != "" {
		r.Etcd.StorageConfig.Transport.ServerList = []string{etcdURL}
	}
	if err := r.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", o.AlternateDNS,
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}

	cfg := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	cfg.Serializer = apiserver.NegotiatedSerializer // JSON and YAML, no protobuf
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(capnopenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "capn"
	cfg.OpenAPIConfig.Info.Version = "v1alpha1"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(capnopenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "capn"
	cfg.OpenAPIV3Config.Info.Version = "v1alpha1"

	if err := r.ApplyTo(cfg); err != nil {
		return nil, err
	}
	// End open watches when shutdown starts. Behind the aggregator, clients
	// such as kube-controller-manager's garbage collector keep watches on
	// nestedclusters open; without this the HTTP server waits for them up to
	// the request timeout (60s), past a pod's default termination grace
	// period, so the process is killed instead of exiting cleanly.
	cfg.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	cfg.ShutdownDelayDuration = o.ShutdownDelay

	if o.Standalone {
		token, err := newAdminToken()
		if err != nil {
			return nil, err
		}
		if err := applyStandaloneAuth(&cfg.Config, token); err != nil {
			return nil, fmt.Errorf("configuring standalone authorization: %w", err)
		}
		if err := writeAdminKubeconfig(o.AdminKubeconfig, cfg.SecureServing, r.SecureServing.BindPort, token); err != nil {
			return nil, err
		}
	} else {
		// The delegating authenticator lets unauthenticated requests through
		// as system:anonymous and leaves the verdict to a SubjectAccessReview.
		// capn refuses them outright, except on the health endpoints that
		// kubelet probes call without credentials.
		cfg.Authentication.Authenticator = rejectAnonymous(cfg.Authentication.Authenticator)
		if rh := cfg.Authentication.RequestHeaderConfig; rh != nil {
			cfg.AddReadyzChecks(frontProxyCAReady(rh.CAContentProvider))
		}
	}
	out := &apiserver.Config{GenericConfig: cfg, FinalizerAdminGroups: o.FinalizerAdminGroups,
		DefaultSleepAfterInactivity: o.DefaultSleepAfterInactivity}
	if o.Provisioner == ProvisionerPods {
		mgmt, err := o.managementConfig()
		if err != nil {
			return nil, err
		}
		mgmtClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(mgmt), "capn-kubeconfig-issuer"))
		if err != nil {
			return nil, fmt.Errorf("management client: %w", err)
		}
		health := controller.NewHealth()
		out.LivezChecks = append(out.LivezChecks, health)
		out.PostStartHooks = map[string]genericapiserver.PostStartHookFunc{
			"start-capn-provisioner": o.provisionerHook(mgmt, cfg.ClientConfig, health),
			// Every replica, not only the leader: the provisioner points a
			// sleeping cluster's address at all ready replicas.
			"start-capn-waker": wakerHook(mgmt),
		}
		// Every replica serves kubeconfigs, not only the provisioning leader:
		// signing needs only the CA Secret, which the provisioner wrote.
		out.KubeconfigIssuer = kubeconfigIssuer{&access.Issuer{Management: mgmtClient}}
		out.MaxKubeconfigExpiration = o.MaxKubeconfigExpiration
		out.JoinTokenIssuer = joinTokenIssuer{&access.JoinIssuer{Management: mgmtClient}}
		out.MaxJoinTokenTTL = o.MaxJoinTokenTTL
		if out.DataPlane, err = o.DataPlane.policy(context.Background(), mgmtClient); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// provisionerHook starts the provisioner once the server serves, the way
// kube-aggregator starts its controllers: it needs the loopback client, so
// it cannot start earlier. core is the kube-apiserver that serves the
// NestedClusters' namespaces, where their Events belong (nil: management).
func (o *Options) provisionerHook(mgmt, core *rest.Config, health *controller.Health) genericapiserver.PostStartHookFunc {
	return func(hctx genericapiserver.PostStartHookContext) error {
		deps := controller.Deps{
			Capn:       hctx.LoopbackClientConfig,
			Management: mgmt,
			Events:     core,
			Health:     health,
			DataPlane:  o.DataPlane.builders(),
		}
		if o.BackupDir != "" {
			deps.BackupStore = backup.Dir{Root: o.BackupDir}
		}
		// Validate refused a bad placement already.
		deps.Placement, _ = o.Placement.Placement()
		// The hook must return for the server to become ready; the
		// controller runs until the server stops.
		go func() {
			var err error
			if deps.Network, err = o.Network.resolve(hctx, mgmt); err != nil {
				// Validate refused bad flags: this is the read, and the
				// syncers keep a port-only rule for what it missed.
				klog.ErrorS(err, "Management endpoints unknown: syncer NetworkPolicies allow ports 443 and 6443 (the management apiserver) or 10250 (kubelets) to any address")
			}
			if err := controller.Start(hctx, o.Settings, deps); err != nil {
				klog.ErrorS(err, "Provisioner stopped")
			}
		}()
		return nil
	}
}

// wakerHook starts the waker (pkg/provisioner/waker) once the server
// serves: it asks for wakes through the loopback client.
func wakerHook(mgmt *rest.Config) genericapiserver.PostStartHookFunc {
	return func(hctx genericapiserver.PostStartHookContext) error {
		go func() {
			if err := waker.Start(hctx, waker.DefaultConfig(), mgmt, hctx.LoopbackClientConfig); err != nil {
				klog.ErrorS(err, "Waker stopped")
			}
		}()
		return nil
	}
}

// managementConfig reaches the cluster the control planes run in.
func (o *Options) managementConfig() (*rest.Config, error) {
	mgmt, err := rest.InClusterConfig()
	if o.ManagementKubeconfig != "" {
		mgmt, err = clientcmd.BuildConfigFromFlags("", o.ManagementKubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("management cluster config (--management-kubeconfig): %w", err)
	}
	mgmt.QPS, mgmt.Burst = o.ManagementQPS, o.ManagementBurst
	return mgmt, nil
}

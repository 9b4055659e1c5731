package server

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"capn.dev/capn/pkg/provisioner/controller"
	"capn.dev/capn/pkg/provisioner/pki"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions(io.Discard, io.Discard)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestProvisionerFlags(t *testing.T) {
	o := parse(t)
	if o.Provisioner != ProvisionerPods || !o.LeaderElect || o.LeaderElectNamespace != "capn-system" ||
		o.CertRenewalThreshold != pki.DefaultRenewalThreshold || o.ManagementKubeconfig != "" ||
		o.MaxKubeconfigExpiration != pki.MaxTenantKubeconfigTTL || o.UpgradeStepTimeout != controller.DefaultUpgradeStepTimeout {
		t.Errorf("defaults: %+v", o)
	}

	o = parse(t, "--standalone", "--provisioner=pods")
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if o.Provisioner != ProvisionerNone {
		t.Errorf("standalone must force --provisioner=none, got %q", o.Provisioner)
	}

	if err := parse(t, "--provisioner=pods").Validate(); err != nil {
		t.Errorf("--provisioner=pods: %v", err)
	}
	o = parse(t, "--provisioner=vms")
	if err := o.Validate(); err == nil {
		t.Error("--provisioner=vms: want an error")
	}
	o = parse(t, "--provisioner=pods", "--cert-renewal-threshold=-1h")
	if err := o.Validate(); err == nil {
		t.Error("negative --cert-renewal-threshold: want an error")
	}
	for _, bad := range []string{"9m", "25h"} {
		o = parse(t, "--max-tenant-kubeconfig-expiration="+bad)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--max-tenant-kubeconfig-expiration") {
			t.Errorf("--max-tenant-kubeconfig-expiration=%s: got %v, want an error naming the flag", bad, err)
		}
	}
	if err := parse(t, "--max-tenant-kubeconfig-expiration=2h").Validate(); err != nil {
		t.Errorf("--max-tenant-kubeconfig-expiration=2h: %v", err)
	}
	if o = parse(t); o.MaxJoinTokenTTL != time.Hour {
		t.Errorf("--max-join-token-ttl defaults to %s, want 1h", o.MaxJoinTokenTTL)
	}
	for _, bad := range []string{"59s", "0s", "-1h", "25h"} {
		o = parse(t, "--max-join-token-ttl="+bad)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--max-join-token-ttl must be between 1m0s and 24h0m0s") {
			t.Errorf("--max-join-token-ttl=%s: got %v, want an error naming the flag", bad, err)
		}
	}
	for _, good := range []string{"1m", "15m", "24h"} {
		if err := parse(t, "--max-join-token-ttl="+good).Validate(); err != nil {
			t.Errorf("--max-join-token-ttl=%s: %v", good, err)
		}
	}
	o = parse(t, "--provisioner=pods", "--upgrade-step-timeout=0s")
	if err := o.Validate(); err == nil {
		t.Error("zero --upgrade-step-timeout: want an error")
	}
	if o = parse(t, "--upgrade-step-timeout=90s"); o.UpgradeStepTimeout.Seconds() != 90 {
		t.Errorf("--upgrade-step-timeout=90s parsed as %s", o.UpgradeStepTimeout)
	}
}

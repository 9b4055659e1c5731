// Command coredns is upstream CoreDNS (github.com/coredns/coredns, pinned in
// this directory's go.mod) linked with only the plugins a tenant cluster's DNS
// addon uses. The full plugin set (core/plugin) drags in the AWS, Azure and
// Google Cloud SDKs, etcd, Nomad, GeoIP and more, which bloat the binary and
// a cold build for nothing a Corefile of ours names.
//
// The binary is built by hack/build-tools.sh and packed by
// hack/build-images.sh as registry.k8s.io/coredns/coredns:<module version>
// (pkg/versions.CoreDNSImage). A Corefile naming any other plugin fails to
// load ("unknown directive"). `coredns -plugins` lists what is linked: these
// plugins plus a few that only register because a linked package imports
// them (prometheus, debug, dnstap, metadata, transfer; see main_test.go),
// which a Corefile cannot name either, as they are not in directives.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins of directives below, registered by their init().
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

// directives is the subset of upstream's core/dnsserver/zdirectives.go (the
// order plugin.cfg gives) that is linked here, in that same order: a plugin
// sees the effect of every plugin after it in a query's chain, so the order
// is behaviour, not style. main_test.go checks it against upstream's list.
var directives = []string{
	"ready",
	"health",
	"errors",
	"loadbalance",
	"cache",
	"template",
	"kubernetes",
	"forward",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}

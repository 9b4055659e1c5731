package versions

// CoreDNSImage is the image of a tenant cluster's DNS addon. It is what
// hack/build-images.sh packs into a local node's images.tar: CoreDNS built
// from hack/tools/coredns with only the plugins that addon's Corefile may use
// (errors, health, ready, kubernetes, template, cache, forward, loadbalance),
// so a Corefile naming another plugin fails to load. The tag is the
// github.com/coredns/coredns version hack/tools/coredns/go.mod pins;
// TestCoreDNSImageMatchesModule keeps the two equal.
const CoreDNSImage = "registry.k8s.io/coredns/coredns:v1.15.0"

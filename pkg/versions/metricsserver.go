package versions

// MetricsServerImage is the image of a tenant cluster's metrics addon
// (metrics.k8s.io, for `kubectl top` and CPU autoscaling). It is what
// hack/build-images.sh packs into a local node's images.tar: upstream's
// sigs.k8s.io/metrics-server/cmd/metrics-server built unchanged from
// hack/tools/metrics-server, with upstream's entrypoint (/metrics-server) and
// user (65534), so upstream's deployment manifest args work as they are. The
// tag is the sigs.k8s.io/metrics-server version
// hack/tools/metrics-server/go.mod pins (the version hack/build-tools.sh keys
// its cache directory by); TestMetricsServerImageMatchesModule keeps the two
// equal.
const MetricsServerImage = "registry.k8s.io/metrics-server/metrics-server:v0.8.0"

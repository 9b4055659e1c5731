package kubelet

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// MaxHostMetricsBytes bounds what is read of a host kubelet's
// /metrics/resource: about 600 bytes per container, so room for several
// thousand containers on one node. A longer answer is refused whole,
// never cut, as a cut one would drop pods silently.
const MaxHostMetricsBytes = 8 << 20

// The /metrics/resource families a virtual Node serves, by name: those
// metrics-server and kubectl top read, and their pod sums. Any other
// family of the host's answer (the node's own, scrape_error, and whatever
// a later kubelet adds) is left out.
var containerFamilies = []string{
	"container_cpu_usage_seconds_total",
	"container_memory_working_set_bytes",
	"container_start_time_seconds",
	"container_swap_usage_bytes",
	"pod_cpu_usage_seconds_total",
	"pod_memory_working_set_bytes",
	"pod_swap_usage_bytes",
}

// The node families a virtual Node serves are computed, not copied (see
// FilterResourceMetrics).
const (
	nodeCPUFamily    = "node_cpu_usage_seconds_total"
	nodeMemoryFamily = "node_memory_working_set_bytes"
)

// The labels a kept series carries; any other label is dropped.
const (
	labelNamespace = "namespace"
	labelPod       = "pod"
	labelContainer = "container"
)

// TenantPod names the tenant pod a host pod runs, found by the tenant UID
// the host pod records: ok is false for every pod that is not this
// tenant's (another tenant's, the provider's, a host pod whose tenant pod
// is gone).
type TenantPod func(hostPod string) (namespace, name string, ok bool)

// FilterResourceMetrics reads a host kubelet's /metrics/resource answer
// and returns what a tenant's virtual Node of that host serves:
//   - the container and pod series of the host pods in hostNamespace that
//     tenantPod recognizes, labelled with the tenant pod's namespace and
//     name (the container name is the tenant's: the syncer keeps it);
//   - node_cpu_usage_seconds_total and node_memory_working_set_bytes as
//     the sums of those containers, not the host node's figures: those
//     include other tenants' and the provider's pods, which a tenant must
//     not see. The node's capacity is public to the tenant (the virtual
//     Node's status); its use by others is not.
//
// Every sample keeps its timestamp; the node sums take the latest of their
// containers'. A container family must be a gauge or counter; anything
// else in the host's answer is refused, not passed through.
func FilterResourceMetrics(in io.Reader, hostNamespace string, tenantPod TenantPod) ([]*dto.MetricFamily, error) {
	body, err := io.ReadAll(io.LimitReader(in, MaxHostMetricsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the host metrics: %w", err)
	}
	if len(body) > MaxHostMetricsBytes {
		return nil, fmt.Errorf("the host metrics are longer than %d bytes", MaxHostMetricsBytes)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing the host metrics: %w", err)
	}
	var out []*dto.MetricFamily
	var cpu, mem nodeSum
	for _, name := range containerFamilies {
		f, ok := fams[name]
		if !ok {
			continue
		}
		t := f.GetType()
		if t != dto.MetricType_GAUGE && t != dto.MetricType_COUNTER {
			return nil, fmt.Errorf("host metric %s is a %s, not a gauge or counter", name, t)
		}
		kept := &dto.MetricFamily{Name: proto.String(name), Help: f.Help, Type: f.Type}
		for _, m := range f.Metric {
			if labelValue(m, labelNamespace) != hostNamespace {
				continue
			}
			ns, pod, ok := tenantPod(labelValue(m, labelPod))
			if !ok {
				continue
			}
			labels := []*dto.LabelPair{
				{Name: proto.String(labelNamespace), Value: proto.String(ns)},
				{Name: proto.String(labelPod), Value: proto.String(pod)},
			}
			if c := labelValue(m, labelContainer); c != "" {
				labels = append([]*dto.LabelPair{{Name: proto.String(labelContainer), Value: proto.String(c)}}, labels...)
			}
			v := sampleValue(m)
			km := &dto.Metric{Label: labels, TimestampMs: m.TimestampMs}
			if t == dto.MetricType_COUNTER {
				km.Counter = &dto.Counter{Value: proto.Float64(v)}
			} else {
				km.Gauge = &dto.Gauge{Value: proto.Float64(v)}
			}
			kept.Metric = append(kept.Metric, km)
			switch name {
			case "container_cpu_usage_seconds_total":
				cpu.add(v, m.GetTimestampMs())
			case "container_memory_working_set_bytes":
				mem.add(v, m.GetTimestampMs())
			}
		}
		if len(kept.Metric) > 0 {
			slices.SortFunc(kept.Metric, func(a, b *dto.Metric) int { return strings.Compare(a.String(), b.String()) })
			out = append(out, kept)
		}
	}
	if cpu.n > 0 {
		out = append(out, cpu.family(nodeCPUFamily, "Cumulative cpu time consumed by this tenant's containers on the node in core-seconds", dto.MetricType_COUNTER))
	}
	if mem.n > 0 {
		out = append(out, mem.family(nodeMemoryFamily, "Current working set of this tenant's containers on the node in bytes", dto.MetricType_GAUGE))
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// WriteMetrics writes families in the Prometheus text format, which is
// what metrics-server reads.
func WriteMetrics(w io.Writer, fams []*dto.MetricFamily) error {
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return err
		}
	}
	return nil
}

// nodeSum adds up one node family from its containers.
type nodeSum struct {
	v  float64
	ts int64
	n  int
}

func (s *nodeSum) add(v float64, ts int64) {
	s.v += v
	s.ts = max(s.ts, ts)
	s.n++
}

func (s *nodeSum) family(name, help string, t dto.MetricType) *dto.MetricFamily {
	m := &dto.Metric{}
	if s.ts != 0 {
		m.TimestampMs = proto.Int64(s.ts)
	}
	if t == dto.MetricType_COUNTER {
		m.Counter = &dto.Counter{Value: proto.Float64(s.v)}
	} else {
		m.Gauge = &dto.Gauge{Value: proto.Float64(s.v)}
	}
	return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: t.Enum(), Metric: []*dto.Metric{m}}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func sampleValue(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

package access

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolac "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	"k8s.io/client-go/kubernetes"

	"capn.dev/capn/pkg/provisioner/pki"
)

// Activity: whether anyone uses a tenant is read from its apiserver's API
// Priority and Fairness, which classifies every request by who sent it.
// The tenant's own control plane and capn land in the priority levels of
// systemPriorityLevels: the provisioner (system:masters) is exempt, the
// controllers, the scheduler, kube-system service accounts (the DNS addon
// among them) and their leader election have their own levels, and
// capn-syncer gets one through CapnFlowSchema. What the tenant's users
// and workloads send lands elsewhere (global-default, workload-low,
// catch-all, or levels the tenant defines), and counts as activity.

// CapnFlowSchema puts capn-syncer's requests at workload-high, beside the
// tenant's controllers: without it they would be global-default, like a
// user's, and a Shared tenant's virtual Node heartbeats would keep it
// awake forever.
const CapnFlowSchema = "capn-syncer"

// systemPriorityLevels are the levels whose requests are not activity.
var systemPriorityLevels = map[string]bool{
	"exempt": true, "system": true, "node-high": true, "leader-election": true, "workload-high": true,
}

// activityPath is APF's per-priority-level dump: a few hundred bytes of
// comma-separated rows, where /metrics is megabytes.
const activityPath = "/debug/api_priority_and_fairness/dump_priority_levels"

// flowSchemas are the FlowSchemas Bootstrap applies.
func flowSchemas() []*flowcontrolac.FlowSchemaApplyConfiguration {
	all := []string{"*"}
	return []*flowcontrolac.FlowSchemaApplyConfiguration{
		flowcontrolac.FlowSchema(CapnFlowSchema).
			WithLabels(map[string]string{"app.kubernetes.io/managed-by": "capn"}).
			WithSpec(flowcontrolac.FlowSchemaSpec().
				WithPriorityLevelConfiguration(flowcontrolac.PriorityLevelConfigurationReference().WithName("workload-high")).
				// After the built-in system schemas (leader election 100,
				// nodes 500, kube-controller-manager 800), before the
				// service-account and global-default ones.
				WithMatchingPrecedence(850).
				WithDistinguisherMethod(flowcontrolac.FlowDistinguisherMethod().WithType(flowcontrolv1.FlowDistinguisherMethodByUserType)).
				WithRules(flowcontrolac.PolicyRulesWithSubjects().
					WithSubjects(flowcontrolac.Subject().WithKind(flowcontrolv1.SubjectKindUser).
						WithUser(flowcontrolac.UserSubject().WithName(pki.SyncerUser))).
					WithResourceRules(flowcontrolac.ResourcePolicyRule().WithVerbs(all...).WithAPIGroups(all...).
						WithResources(all...).WithClusterScope(true).WithNamespaces(all...)).
					WithNonResourceRules(flowcontrolac.NonResourcePolicyRule().WithVerbs(all...).WithNonResourceURLs(all...)))),
	}
}

func flowSchemaMatches(live *flowcontrolv1.FlowSchema, want *flowcontrolac.FlowSchemaApplyConfiguration) bool {
	s := want.Spec
	return live.Spec.PriorityLevelConfiguration.Name == *s.PriorityLevelConfiguration.Name &&
		live.Spec.MatchingPrecedence == *s.MatchingPrecedence && len(live.Spec.Rules) == len(s.Rules) &&
		len(live.Spec.Rules[0].Subjects) == 1 && live.Spec.Rules[0].Subjects[0].User != nil &&
		live.Spec.Rules[0].Subjects[0].User.Name == *s.Rules[0].Subjects[0].User.Name
}

func applyFlowSchemas(ctx context.Context, tenant kubernetes.Interface, opts metav1.ApplyOptions,
	step func(kind, name string, current func() (bool, error), apply func() error) error) error {
	fc := tenant.FlowcontrolV1().FlowSchemas()
	for _, fs := range flowSchemas() {
		if err := step("FlowSchema", *fs.Name, func() (bool, error) {
			live, err := fc.Get(ctx, *fs.Name, metav1.GetOptions{})
			return err == nil && flowSchemaMatches(live, fs), err
		}, func() error { _, err := fc.Apply(ctx, fs, opts); return err }); err != nil {
			return err
		}
	}
	return nil
}

// TenantRequests is how many requests the tenant apiserver has dispatched
// outside systemPriorityLevels since it started: a counter that grows
// while anyone uses the tenant. The answer is the tenant's, so it is read
// bounded (the client's MaxTenantResponseBytes) and parsed strictly.
func TenantRequests(ctx context.Context, tenant kubernetes.Interface) (int64, error) {
	body, err := tenant.Discovery().RESTClient().Get().AbsPath(activityPath).DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	return parseDispatched(body)
}

// errMalformedDump: the APF dump did not have the expected shape.
var errMalformedDump = errors.New("malformed priority-level dump")

// parseDispatched sums the DispatchedRequests column (found by its
// header) over the rows of non-system priority levels.
func parseDispatched(body []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	nameCol, dispatchedCol := -1, -1
	var total int64
	for sc.Scan() {
		cols := strings.Split(sc.Text(), ",")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		if nameCol < 0 {
			for i, c := range cols {
				switch c {
				case "PriorityLevelName":
					nameCol = i
				case "DispatchedRequests":
					dispatchedCol = i
				}
			}
			if nameCol < 0 || dispatchedCol < 0 {
				return 0, fmt.Errorf("%w: no PriorityLevelName and DispatchedRequests header", errMalformedDump)
			}
			continue
		}
		if len(cols) == 1 && cols[0] == "" {
			continue
		}
		if len(cols) <= max(nameCol, dispatchedCol) {
			return 0, fmt.Errorf("%w: short row", errMalformedDump)
		}
		n, err := strconv.ParseInt(cols[dispatchedCol], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: DispatchedRequests is not a count", errMalformedDump)
		}
		if !systemPriorityLevels[cols[nameCol]] {
			total += n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if nameCol < 0 {
		return 0, fmt.Errorf("%w: empty", errMalformedDump)
	}
	return total, nil
}

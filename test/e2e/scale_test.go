//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/test/framework"
)

// testScaling scales one component at a time and checks that only its
// workload changed; it returns the time a 1 -> 3 apiserver scale took.
func testScaling(t *testing.T, e *upgradeEnv, name, oneReplica string) string {
	t.Helper()
	ns := mgmtNamespace(t, e.admin, name)
	gen := func(d string) string { return e.jsonpath(t, ns, "deployment/"+d, "{.metadata.generation}") }
	apiGen, schedGen := gen(provisioner.APIServerName), gen(provisioner.SchedulerName)

	if _, errOut, err := e.nested(time.Minute, "scale", name, "--component=controller-manager", "--replicas=2"); err != nil {
		t.Fatalf("kubectl nested scale --component=controller-manager: %v: %s", err, errOut)
	}
	framework.Eventually(t, 3*time.Minute, "2 ready kube-controller-manager replicas", func() (bool, string) {
		r := e.admin.Run("", "get", "deployment", provisioner.ControllerManagerName, "-n", ns, "-o", "jsonpath={.spec.replicas} {.status.readyReplicas}")
		return r.Stdout == "2 2", r.Stdout + r.Stderr
	})
	kcm := e.admin.MustRun(t, "", "get", "deployment", provisioner.ControllerManagerName, "-n", ns, "-o",
		"jsonpath={.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight} {.spec.template.spec.containers[0].args}")
	if !strings.Contains(kcm, "--leader-elect=true") || strings.HasPrefix(kcm, " ") {
		t.Errorf("kube-controller-manager with 2 replicas: want preferred anti-affinity and --leader-elect=true, got %s", kcm)
	}
	if min := e.jsonpath(t, ns, "pdb/"+provisioner.ControllerManagerName, "{.spec.minAvailable}"); min != "1" {
		t.Errorf("kube-controller-manager PDB minAvailable %q, want 1", min)
	}
	if a, s := gen(provisioner.APIServerName), gen(provisioner.SchedulerName); a != apiGen || s != schedGen {
		t.Errorf("scaling the controller-manager changed other workloads: apiserver generation %s -> %s, scheduler %s -> %s", apiGen, a, schedGen, s)
	}

	kcmGen := gen(provisioner.ControllerManagerName)
	e.k.MustRun(t, "", "scale", "nestedcluster/"+name, "--replicas=3")
	framework.Eventually(t, 3*time.Minute, "3 ready apiservers in "+name, func() (bool, string) {
		r := e.k.Run("", "get", "nc", name, "-o", "jsonpath={.status.apiServer.readyReplicas} {.status.replicas}")
		return r.Stdout == "3 3", r.Stdout + r.Stderr
	})
	if g := gen(provisioner.ControllerManagerName); g != kcmGen {
		t.Errorf("kubectl scale changed the controller-manager: generation %s -> %s", kcmGen, g)
	}

	started := time.Now()
	e.k.MustRun(t, "", "scale", "nestedcluster/"+oneReplica, "--replicas=3")
	framework.Eventually(t, 3*time.Minute, "3 ready apiservers in "+oneReplica, func() (bool, string) {
		r := e.k.Run("", "get", "nc", oneReplica, "-o", "jsonpath={.status.apiServer.readyReplicas} {.status.apiServer.updatedReplicas}")
		return r.Stdout == "3 3", r.Stdout + r.Stderr
	})
	return fmt.Sprintf("kubectl scale nestedcluster 1 -> 3 apiservers Ready in %s", time.Since(started).Round(time.Millisecond))
}

// testHPA shows an HPA resolving nestedclusters' /scale. There is no
// metrics API here, so it can read the scale but not compute a target:
// AbleToScale=True is the proof, ScalingActive=False is expected.
func testHPA(t *testing.T, e *upgradeEnv, name string) {
	t.Helper()
	hpa := `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: ` + name + `
spec:
  scaleTargetRef: {apiVersion: capn.dev/v1alpha1, kind: NestedCluster, name: ` + name + `}
  minReplicas: 3
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`
	e.k.MustRun(t, hpa, "create", "-f", "-")
	framework.Eventually(t, 2*time.Minute, "the HPA to resolve nestedclusters/"+name+"/scale", func() (bool, string) {
		r := e.k.Run("", "get", "hpa", name, "-o",
			`jsonpath={.status.conditions[?(@.type=="AbleToScale")].status}/{.status.conditions[?(@.type=="AbleToScale")].reason} {.status.currentReplicas}`)
		return r.Stdout == "True/SucceededGetScale 3", r.Stdout + r.Stderr
	})
	active := e.k.MustRun(t, "", "get", "hpa", name, "-o", `jsonpath={.status.conditions[?(@.type=="ScalingActive")].reason}: {.status.conditions[?(@.type=="ScalingActive")].message}`)
	t.Logf("HPA on nestedcluster/%s: AbleToScale=True (SucceededGetScale); ScalingActive %s", name, active)
	e.k.MustRun(t, "", "delete", "hpa", name)
}

// testStuckUpgrade upgrades to an apiserver image that never starts: the
// upgrade must halt Degraded at the apiserver, leave the kcm and scheduler
// alone, and roll back when the version is set back.
func testStuckUpgrade(t *testing.T, e *upgradeEnv, name string) {
	t.Helper()
	ns := mgmtNamespace(t, e.admin, name)
	version := func(d string) string {
		return e.jsonpath(t, ns, "deployment/"+d, `{.metadata.generation} {.spec.template.metadata.annotations.capn\.dev/version}`)
	}
	kcm, sched := version(provisioner.ControllerManagerName), version(provisioner.SchedulerName)
	// imagePullPolicy Never: a missing image fails on the node, with no
	// attempt to reach a registry.
	e.k.MustRun(t, "", "patch", "nc", name, "--type=merge", "-p",
		`{"spec":{"version":"v1.37.2","apiServer":{"image":"registry.k8s.io/kube-apiserver:v1.37.2-missing","podTemplate":{"spec":{"containers":[{"name":"kube-apiserver","imagePullPolicy":"Never"}]}}}}}`)
	var msg string
	framework.Eventually(t, 4*time.Minute, name+" Degraded at kube-apiserver", func() (bool, string) {
		r := e.k.Run("", "get", "nc", name, "-o",
			`jsonpath={.status.phase} {.status.conditions[?(@.type=="Degraded")].status} {.status.conditions[?(@.type=="Degraded")].reason}|{.status.conditions[?(@.type=="Degraded")].message}`)
		msg = r.Stdout
		return strings.HasPrefix(r.Stdout, "Degraded True KubeAPIServer") && strings.Contains(r.Stdout, "ErrImageNeverPull"), r.Stdout + r.Stderr
	})
	t.Logf("stuck upgrade halted: %s", msg)
	if k, s := version(provisioner.ControllerManagerName), version(provisioner.SchedulerName); k != kcm || s != sched {
		t.Errorf("the halted upgrade touched kcm (%s -> %s) or scheduler (%s -> %s)", kcm, k, sched, s)
	}
	if r := e.k.MustRun(t, "", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="APIServerAvailable")].status}`); r != "True" {
		t.Errorf("the old apiservers stopped serving while the new ones could not start: APIServerAvailable=%s", r)
	}

	e.k.MustRun(t, "", "patch", "nc", name, "--type=merge", "-p", `{"spec":{"version":"v1.36.3","apiServer":{"image":null,"podTemplate":null}}}`)
	framework.Eventually(t, 4*time.Minute, name+" rolled back", func() (bool, string) {
		r := e.k.Run("", "get", "nc", name, "-o",
			`jsonpath={.status.phase} {.status.conditions[?(@.type=="Progressing")].reason} {.status.apiServer.version} {.status.apiServer.readyReplicas}`)
		return r.Stdout == "Ready RollbackComplete v1.36.3 3", r.Stdout + r.Stderr
	})
}

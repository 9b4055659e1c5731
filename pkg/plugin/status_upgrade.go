package plugin

import (
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// printUpgrade writes the upgrade section of `status`: from -> to, the
// component being rolled, when it started and finished, the Progressing and
// Degraded conditions, and one row per step. It writes nothing when
// status.upgrade is unset, and reports whether it wrote the conditions (so
// the Conditions list need not repeat them).
func printUpgrade(out io.Writer, nc *v1alpha1.NestedCluster) (bool, error) {
	u := nc.Status.Upgrade
	if u == nil {
		return false, nil
	}
	state := "in progress"
	if u.FinishedAt != nil {
		state = "finished"
	} else if u.Component != "" {
		state = "rolling " + u.Component
	}
	if isNewer(u.From, u.To) {
		state = "rollback, " + state
	}
	finished := timestamp(u.FinishedAt)
	if d, ok := took(u.StartedAt, u.FinishedAt); ok {
		finished += " (took " + d + ")"
	}
	lines := []string{
		fmt.Sprintf("Upgrade:   %s -> %s (%s)", u.From, u.To, state),
		"  Component:    " + dash(u.Component),
		"  Started:      " + timestamp(u.StartedAt),
		"  Finished:     " + finished,
	}
	for _, typ := range []string{v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded} {
		if c := meta.FindStatusCondition(nc.Status.Conditions, typ); c != nil {
			lines = append(lines, fmt.Sprintf("  %-14s%s", typ+":", describeCondition(c)))
		}
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(out, l); err != nil {
			return false, err
		}
	}
	if len(u.Steps) == 0 {
		_, err := fmt.Fprintln(out, "  Steps:        <none>")
		return true, err
	}
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "  STEP\tCOMPONENT\tVERSION\tSTARTED\tFINISHED\tDURATION")
	for i, s := range u.Steps {
		d, ok := took(s.StartedAt, s.FinishedAt)
		switch {
		case ok:
		case s.FinishedAt != nil:
			d = "-"
		case i == len(u.Steps)-1 && u.FinishedAt == nil:
			d = "in progress"
		default:
			d = "interrupted" // a rollback replaced it before it finished
		}
		fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%s\t%s\n", i+1, s.Component, s.Version, timestamp(s.StartedAt), timestamp(s.FinishedAt), d)
	}
	return true, w.Flush()
}

// describeCondition is "Status (Reason): Message", leaving out what is empty.
func describeCondition(c *metav1.Condition) string {
	l := string(c.Status)
	if c.Reason != "" {
		l += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		l += ": " + c.Message
	}
	return l
}

func timestamp(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

package main

import (
	"encoding/xml"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const run = `<testsuites><testsuite>
<testcase name="[SynchronizedBeforeSuite]" status="passed"></testcase>
<testcase name="[It] a [Feature:X]" status="passed"></testcase>
<testcase name="[It] b [Feature:X]" status="failed"><failure message="boom"></failure></testcase>
<testcase name="[It] c [Feature:X]" status="skipped"><skipped></skipped></testcase>
<testcase name="[It] d [Feature:Y]" status="skipped"><skipped></skipped></testcase>
</testsuite></testsuites>`

const dry = `<testsuites><testsuite>
<testcase name="[It] a [Feature:X]" status="passed"></testcase>
<testcase name="[It] e [Feature:X]" status="passed"></testcase>
</testsuite></testsuites>`

// Only what ran and passed counts: a selected spec skipped or never
// reported is a failure; specs outside the focus and suite nodes are not
// specs of the selection.
func TestTableCountsOnlyWhatRanAndPassed(t *testing.T) {
	var r, d report
	require.NoError(t, xml.Unmarshal([]byte(run), &r))
	require.NoError(t, xml.Unmarshal([]byte(dry), &d))
	focus := regexp.MustCompile(`\[Feature:X\]`)
	cases := specs(r, focus, nil)
	require.Len(t, cases, 3)
	cases = append(cases, testCase{Name: specs(d, focus, nil)[1].Name, Status: "not run"})
	out, passed := table(cases)
	assert.Equal(t, 1, passed)
	assert.Contains(t, out, "| [It] b [Feature:X] | failed |")
	assert.Contains(t, out, "| [It] c [Feature:X] | failed (skipped) |")
	assert.Contains(t, out, "| [It] e [Feature:X] | failed (not run) |")
	assert.Contains(t, out, "1 passed, 3 failed")
}

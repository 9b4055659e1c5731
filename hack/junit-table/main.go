// Command junit-table reads a Ginkgo JUnit report and prints one Markdown
// table line per spec with its result, then one line "N passed, N
// failed", over the specs whose name matches -focus and not -skip (the
// run's own selection: Ginkgo reports the specs it filtered out as skipped
// too). A selected spec that was skipped counts as failed: a conformance
// count only credits what ran and passed.
package main

import (
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

type testCase struct {
	Name    string    `xml:"name,attr"`
	Status  string    `xml:"status,attr"`
	Time    float64   `xml:"time,attr"`
	Skipped *struct{} `xml:"skipped"`
	Failure *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
}

type report struct {
	Suites []struct {
		Cases []testCase `xml:"testcase"`
	} `xml:"testsuite"`
}

func main() {
	focus := flag.String("focus", "", "count only specs whose name matches this regexp")
	skip := flag.String("skip", "", "and does not match this one")
	selected := flag.String("selected", "", "a dry run's JUnit report: its specs that the run does not report count as failed (not run)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: junit-table [-focus RE] [-skip RE] JUNIT.xml")
		os.Exit(2)
	}
	focusRE, err := regexp.Compile(*focus)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var skipRE *regexp.Regexp
	if *skip != "" {
		if skipRE, err = regexp.Compile(*skip); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	cases := specs(read(flag.Arg(0)), focusRE, skipRE)
	if *selected != "" {
		dry := read(*selected)
		ran := map[string]bool{}
		for _, c := range cases {
			ran[c.Name] = true
		}
		for _, c := range specs(dry, focusRE, skipRE) {
			if !ran[c.Name] {
				cases = append(cases, testCase{Name: c.Name, Status: "not run"})
			}
		}
	}
	out, _ := table(cases)
	fmt.Print(out)
}

// table is the results table of cases and how many passed. A case
// passes only with status passed and no failure or error.
func table(cases []testCase) (string, int) {
	var b strings.Builder
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	passed := 0
	b.WriteString("| spec | result | seconds |\n|---|---|---|\n")
	for _, c := range cases {
		result := "failed"
		switch {
		case c.Failure != nil || c.Error != nil:
		case c.Status == "not run":
			result = "failed (not run)"
		case c.Skipped != nil || c.Status == "skipped" || c.Status == "pending":
			result = "failed (skipped)"
		case c.Status == "passed":
			result = "passed"
			passed++
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f |\n", strings.ReplaceAll(c.Name, "|", `\|`), result, c.Time)
	}
	fmt.Fprintf(&b, "\n%d passed, %d failed\n", passed, len(cases)-passed)
	return b.String(), passed
}

// read parses the JUnit report at path, or exits.
func read(path string) report {
	b, err := os.ReadFile(path)
	if err == nil {
		var r report
		if err = xml.Unmarshal(b, &r); err == nil {
			return r
		}
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
	return report{}
}

// specs are the report's specs that the selection takes.
func specs(r report, focus, skip *regexp.Regexp) []testCase {
	var cases []testCase
	for _, s := range r.Suites {
		for _, c := range s.Cases {
			// Ginkgo's suite-level nodes are not specs.
			if strings.HasPrefix(c.Name, "[SynchronizedBeforeSuite]") || strings.HasPrefix(c.Name, "[SynchronizedAfterSuite]") ||
				strings.HasPrefix(c.Name, "[BeforeSuite]") || strings.HasPrefix(c.Name, "[AfterSuite]") || strings.HasPrefix(c.Name, "[ReportAfterSuite]") ||
				strings.HasPrefix(c.Name, "[ReportBeforeSuite]") {
				continue
			}
			if !focus.MatchString(c.Name) || skip != nil && skip.MatchString(c.Name) {
				continue
			}
			cases = append(cases, c)
		}
	}
	return cases
}

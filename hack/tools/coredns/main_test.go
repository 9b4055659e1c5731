package main

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
)

// main() has not run in a test, so dnsserver.Directives is still upstream's
// full, ordered list (core/dnsserver/zdirectives.go).
func TestDirectivesFollowUpstreamOrder(t *testing.T) {
	var want []string
	for _, d := range dnsserver.Directives {
		if slices.Contains(directives, d) {
			want = append(want, d)
		}
	}
	if !slices.Equal(directives, want) {
		t.Errorf("directives = %v, want upstream's order %v (every entry must be an upstream directive)", directives, want)
	}
}

// transitive are plugins registered only because a linked package imports
// theirs (core/dnsserver and cache import metrics, i.e. prometheus; forward
// imports debug and dnstap; kubernetes imports transfer; most import
// metadata). `coredns -plugins` lists them, but as they are not in
// directives a Corefile naming one fails to load ("unknown directive").
var transitive = []string{"debug", "dnstap", "metadata", "prometheus", "transfer"}

// Every directive has its plugin linked, and nothing else is linked beyond
// the known transitive registrations: a CoreDNS bump that drags in another
// plugin fails here, to be looked at.
func TestLinkedPlugins(t *testing.T) {
	var linked []string
	for _, p := range caddy.ListPlugins()["others"] {
		if name, ok := strings.CutPrefix(p, "dns."); ok {
			linked = append(linked, name)
		}
	}
	want := append(slices.Clone(directives), transitive...)
	sort.Strings(want)
	if !slices.Equal(linked, want) {
		t.Errorf("linked plugins = %v, want exactly %v (directives plus transitive)", linked, want)
	}
}

// Command labelkey prints the host label key the syncer carries a tenant
// label key under (names.TenantLabelKey), or with -namespace a tenant
// namespace's label key (names.NamespaceLabelKey): for selecting a
// tenant's host pods with kubectl on the management cluster.
package main

import (
	"flag"
	"fmt"
	"os"

	"capn.dev/capn/pkg/tenant/names"
)

func main() {
	namespace := flag.Bool("namespace", false, "the key is a tenant namespace's label")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: labelkey [-namespace] KEY...") }
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	for _, k := range flag.Args() {
		if *namespace {
			fmt.Println(names.NamespaceLabelKey(k))
		} else {
			fmt.Println(names.TenantLabelKey(k))
		}
	}
}

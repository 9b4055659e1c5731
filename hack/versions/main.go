// Command versions prints the release capn builds for each supported minor
// (pkg/versions.Supported), one per line, oldest first. hack/build-images.sh
// and the Makefile read it so that the local cluster carries the component
// images of every version the API accepts, and a new minor needs no edit here.
package main

import (
	"fmt"

	"capn.dev/capn/pkg/versions"
)

func main() {
	for _, m := range versions.Supported {
		fmt.Println(m.Default)
	}
}

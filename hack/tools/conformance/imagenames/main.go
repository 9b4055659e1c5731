// Command imagenames prints the image references that the e2e suite of the
// k8s.io/kubernetes this module pins uses, so images built here get exactly
// those names (hack/build-conformance-images.sh). The names come from the
// suite's own k8s.io/kubernetes/test/utils/image package, so they follow
// KUBE_TEST_REPO_LIST (a registry remapping file) as e2e.test does.
//
//	imagenames agnhost busybox pause    one reference per argument, in order
package main

import (
	"fmt"
	"os"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

// images are the test/utils/image IDs capn builds, by short name.
var images = map[string]imageutils.ImageID{
	"agnhost": imageutils.Agnhost,
	"busybox": imageutils.BusyBox,
	"pause":   imageutils.Pause,
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: imagenames NAME...  (NAME: agnhost, busybox, pause)")
		os.Exit(2)
	}
	for _, n := range os.Args[1:] {
		id, ok := images[n]
		if !ok {
			fmt.Fprintf(os.Stderr, "imagenames: unknown image %q\n", n)
			os.Exit(2)
		}
		fmt.Println(imageutils.GetE2EImage(id))
	}
}

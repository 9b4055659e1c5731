// Command kubectl-nested is the `kubectl nested` plugin for capn
// NestedClusters. Install it anywhere on PATH (`make install-plugin`).
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"capn.dev/capn/pkg/plugin"
)

func main() {
	cmd := plugin.NewCmdNested(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		// API errors are printed as client-go returns them.
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

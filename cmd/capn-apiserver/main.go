// Command capn-apiserver serves the capn.dev API group.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"capn.dev/capn/pkg/cmd/server"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	cmd := server.NewCommand(ctx, server.NewOptions(os.Stdout, os.Stderr))
	os.Exit(cli.Run(cmd))
}

/*
Copyright The capn Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command kubectl is built from the published k8s.io/kubectl module (no
// replace directives needed). It mirrors k8s.io/kubernetes/cmd/kubectl/kubectl.go.
package main

import (
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // exec/oidc auth providers in kubeconfigs
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// -v must take effect before the command tree is built, as upstream does.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	// kubectl prints its own errors through CheckErr (with exit codes), so
	// cli.Run's generic error printing must stay off.
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}

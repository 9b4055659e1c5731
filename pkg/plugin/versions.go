package plugin

import (
	"fmt"

	"github.com/spf13/cobra"

	"capn.dev/capn/pkg/versions"
)

func newCmdVersions(c *common) *cobra.Command {
	return &cobra.Command{
		Use:   "versions",
		Short: "List the Kubernetes versions a NestedCluster can run (the default is marked)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			def := versions.Default()
			for _, m := range versions.Supported {
				line := m.Default
				if m.Default == def {
					line += " (default)"
				}
				if _, err := fmt.Fprintln(c.Out, line); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() { RegisterCmd(newVersionCmd) }

// newVersionCmd builds the version command (as rtscope --version).
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  cobra.NoArgs,
		Run:   func(c *cobra.Command, _ []string) { fmt.Fprintln(c.OutOrStdout(), "rtscope", Version) },
	}
}

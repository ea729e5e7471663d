package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/config"
)

// formats lists the values of --format by command, for completion.
var formats = map[string][]string{
	"query":        {"table", "csv", "json"},
	"completeness": {"table", "csv", "json"},
	"status":       {"table", "json"},
	"ingest":       {"csv", "jsonl", "mscons"},
}

// addCompletions teaches the completion scripts (meterstore completion
// bash|zsh|fish|powershell) the values of the flags every
// command shares: --config completes TOML files, --table the tables the
// configuration declares, --format the formats the command writes.
func addCompletions(cmd *cobra.Command) {
	f := cmd.Flags()
	if f.Lookup("config") != nil {
		cmd.RegisterFlagCompletionFunc("config", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"toml"}, cobra.ShellCompDirectiveFilterFileExt
		})
		if f.Lookup("table") != nil {
			cmd.RegisterFlagCompletionFunc("table", completeTables)
		}
	}
	if values, ok := formats[cmd.Name()]; ok && f.Lookup("format") != nil {
		cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	}
	for _, sub := range cmd.Commands() {
		addCompletions(sub)
	}
}

// completeTables returns the tables the configuration of --config
// declares; it reads the file only, opening nothing.
func completeTables(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	path, _ := cmd.Flags().GetString("config")
	cfg, err := config.Load(path)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, t := range cfg.Tables() {
		names = append(names, t.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// newCompletion is the completion command: a script for each shell cobra
// writes one for, and an error for any other. Cobra's own command, left as
// it is, prints its help and exits 0 for "completion tcsh", as if a script
// had been written.
func newCompletion(root *cobra.Command) *cobra.Command {
	shells := []struct {
		name string
		gen  func(w io.Writer) error
	}{
		{"bash", func(w io.Writer) error { return root.GenBashCompletionV2(w, true) }},
		{"zsh", root.GenZshCompletion},
		{"fish", func(w io.Writer) error { return root.GenFishCompletion(w, true) }},
		{"powershell", root.GenPowerShellCompletionWithDesc},
	}
	var names []string
	for _, sh := range shells {
		names = append(names, sh.name)
	}
	want := strings.Join(names, ", ")
	cmd := &cobra.Command{
		Use:   "completion SHELL",
		Short: "Write the completion script of a shell: " + want,
		Long: `Writes the script that completes meterstore's commands, flags, the tables of
--config and the formats of --format in the shell named: ` + want + `. Load it
as the shell loads completions, such as
  source <(meterstore completion bash)`,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("completion: name a shell: %s", want)
			}
			return fmt.Errorf("completion: unknown shell %q: want %s", args[0], want)
		},
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	for _, sh := range shells {
		cmd.AddCommand(&cobra.Command{
			Use:               sh.name,
			Short:             "Write the completion script of " + sh.name,
			Args:              cobra.NoArgs,
			ValidArgsFunction: cobra.NoFileCompletions,
			RunE:              func(cmd *cobra.Command, _ []string) error { return sh.gen(cmd.OutOrStdout()) },
		})
	}
	return cmd
}

package main

import (
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

// addCompletions teaches cobra's completion command (meterstore
// completion bash|zsh|fish|powershell) the values of the flags every
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

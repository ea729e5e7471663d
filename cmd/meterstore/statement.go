package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/store"
)

// errStatementTooLarge refuses a statement past store.MaxStatementBytes.
var errStatementTooLarge = fmt.Errorf("a statement has at most %d bytes (1 MiB)", store.MaxStatementBytes)

// statementArg returns the SQL an argument gives: the argument itself,
// standard input for "-", or the content of FILE for "@FILE", each at most
// store.MaxStatementBytes. An empty statement is refused here, before
// anything is opened, and so is a larger one, having read no more than
// one byte past the bound: @/dev/zero or an endless pipe is no statement.
func statementArg(cmd *cobra.Command, arg string) (string, error) {
	sql, what := arg, "the argument"
	var err error
	switch {
	case arg == "-":
		what = "standard input"
		sql, err = readStatement(cmd.InOrStdin(), what)
	case strings.HasPrefix(arg, "@"):
		what = arg[1:]
		sql, err = readStatementFile(what)
	}
	if err != nil {
		return "", err
	}
	if len(sql) > store.MaxStatementBytes {
		return "", fmt.Errorf("the statement in %s: %w", what, errStatementTooLarge)
	}
	if strings.TrimSpace(sql) == "" {
		return "", fmt.Errorf("no SQL statement in %s", what)
	}
	return sql, nil
}

// readStatementFile reads the statement in the file name.
func readStatementFile(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("reading the statement: %w", err)
	}
	defer f.Close()
	return readStatement(f, name)
}

// readStatement reads a statement from r, named what in an error: at most
// one byte past store.MaxStatementBytes, which statementArg refuses.
func readStatement(r io.Reader, what string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, store.MaxStatementBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading the statement from %s: %w", what, err)
	}
	if len(b) > store.MaxStatementBytes {
		return "", fmt.Errorf("the statement in %s: %w", what, errStatementTooLarge)
	}
	return string(b), nil
}

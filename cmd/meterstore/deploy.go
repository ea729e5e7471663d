package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// Exit codes, after sysexits: a retryable failure is EX_TEMPFAIL.
const (
	exitOK        = 0
	exitPermanent = 1
	exitRetryable = 75
)

// exitCode returns the exit status err calls for.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case store.IsRetryable(err):
		return exitRetryable
	}
	return exitPermanent
}

// errUnhealthy is what status returns for a deployment that needs an
// operator; it has been reported already.
var errUnhealthy = errors.New("unhealthy")

// deployment holds the flags every command on a configured deployment
// takes.
type deployment struct {
	path    string
	now     string
	verbose bool
}

func (d *deployment) flags(cmd *cobra.Command, withNow bool) {
	cmd.Flags().StringVarP(&d.path, "config", "c", "meterstore.toml", "the deployment's configuration (see meterstore init)")
	cmd.Flags().BoolVarP(&d.verbose, "verbose", "v", false, "log every partition created, window archived and deferral")
	if withNow {
		cmd.Flags().StringVar(&d.now, "now", "", "the time to act at, RFC 3339 (default: the clock)")
	}
}

// open loads the configuration and opens the store it describes, with
// the options given.
func (d *deployment) open(ctx context.Context, with ...store.ConfigOption) (*store.Store, *config.Config, error) {
	cfg, err := d.load()
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelWarn
	if d.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	s, err := store.OpenConfig(ctx, cfg, log, with...)
	if err != nil {
		return nil, nil, err
	}
	return s, cfg, nil
}

// load reads the configuration at --config; a missing one is a permanent
// error that says how to write one.
func (d *deployment) load() (*config.Config, error) {
	cfg, err := config.Load(d.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("configuration %s does not exist; write one with: meterstore init %[1]s", d.path)
	}
	return cfg, err
}

// openAt opens the store like open and returns the time to act at, which
// the store must accept (store.Store.CheckNow).
func (d *deployment) openAt(ctx context.Context) (*store.Store, time.Time, error) {
	now, err := d.clock()
	if err != nil {
		return nil, time.Time{}, err
	}
	s, _, err := d.open(ctx)
	if err != nil {
		return nil, now, err
	}
	if err := s.CheckNow(now); err != nil {
		s.Close()
		return nil, now, fmt.Errorf("--now: %w", err)
	}
	return s, now, nil
}

// clock returns --now, or the time.
func (d *deployment) clock() (time.Time, error) {
	if d.now == "" {
		return time.Now(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, d.now)
	if err != nil {
		return time.Time{}, fmt.Errorf("--now %q: want RFC 3339, such as 2026-03-01T06:00:00+01:00", d.now)
	}
	return t, nil
}

func newInit() *cobra.Command {
	var (
		force bool
		to    string
	)
	cmd := &cobra.Command{
		Use:   "init [file]",
		Short: "Write a commented configuration template (default meterstore.toml)",
		Long: `Writes a commented configuration template to the file given as the
argument or with -c, as every other command names it (default
meterstore.toml). An existing file is kept unless --force.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "meterstore.toml"
			switch {
			case len(args) == 1 && to != "" && args[0] != to:
				return fmt.Errorf("init: the file is named twice, %s and -c %s; name it once", args[0], to)
			case len(args) == 1:
				path = args[0]
			case to != "":
				path = to
			}
			flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flag, 0o644)
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%s exists; use --force to overwrite it", path)
			}
			if err != nil {
				return err
			}
			if _, err := f.WriteString(config.Template()); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s; check it with: meterstore check -c %s\n", path, path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	cmd.Flags().StringVarP(&to, "config", "c", "", "the file to write, as the argument names it")
	return cmd
}

func newCheck() *cobra.Command {
	var d deployment
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate a configuration: unknown keys, units, ${VAR}s and settings that interact",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := d.load()
			if err != nil {
				return err
			}
			if err := store.CheckConfig(cfg); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid: %d tables, log %s, warehouse %s\n",
				d.path, len(cfg.Tables()), cfg.Catalog.Log, cfg.Warehouse.URL)
			return nil
		},
	}
	d.flags(cmd, false)
	return cmd
}

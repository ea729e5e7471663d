// Package config reads a MeterStore deployment's TOML file into typed
// settings and converts them into the options of the packages they
// configure: hot.Options, archive.Config, cold.Options, cold.Retention,
// the catalog log's postgres.Options and the declared hot.Tables.
//
// A file is checked whole before anything is opened. Every problem is
// reported, each as an *Error naming its line and key path: unknown keys
// (a misspelled key must not leave a default silently in force), durations
// without a unit, sizes and enumerations out of range, unresolved ${VAR}
// references, and settings that are valid alone but wrong together, such
// as a settlement lag shorter than the archival step.
//
// Template returns a commented file with every key and its default;
// Default is what it parses to.
package config

// Package config reads a MeterStore deployment's TOML file into a Config:
// typed settings per section ([postgres], [warehouse], [catalog],
// [archive], [query], [maintenance], [retention], [server] and its
// tokens) and the declared tables as series.Table values. It imports no
// tier: store.OpenConfig turns a Config into the tiers' options.
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

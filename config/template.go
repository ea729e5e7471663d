package config

import _ "embed"

//go:embed template.toml
var template string

// Template returns a commented configuration file that documents every
// key with its default and declares a power table (STROM, PT15M) and a gas
// table (GAS, P1D). Parse accepts it as it is; Default is its result.
func Template() string { return template }

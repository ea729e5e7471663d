package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// rawConfig is the shape of a file. Every key is a value, so that decoding
// never stops at a wrong one; the reader then checks each.
type rawConfig struct {
	Postgres struct {
		URL     value `toml:"url"`
		Schema  value `toml:"schema"`
		DataDir value `toml:"data_dir"`
	} `toml:"postgres"`
	Warehouse struct {
		URL       value `toml:"url"`
		Namespace value `toml:"namespace"`
	} `toml:"warehouse"`
	Catalog struct {
		Type      value `toml:"type"`
		URI       value `toml:"uri"`
		Log       value `toml:"log"`
		Isolation value `toml:"isolation"`
	} `toml:"catalog"`
	Hot struct {
		DDLLockTimeout value `toml:"ddl_lock_timeout"`
		AcceptAhead    value `toml:"accept_ahead"`
	} `toml:"hot"`
	Archive struct {
		SettlementLag      value `toml:"settlement_lag"`
		Step               value `toml:"archival_step"`
		MaxWindowsPerCycle value `toml:"max_windows_per_cycle"`
		ReaderGrace        value `toml:"reader_grace"`
		ChunkRows          value `toml:"chunk_rows"`
	} `toml:"archive"`
	Cold struct {
		RowGroupRows   value `toml:"row_group_rows"`
		RowGroupBytes  value `toml:"row_group_bytes"`
		TargetFileSize value `toml:"target_file_size"`
		ZstdLevel      value `toml:"zstd_level"`
		BloomBytes     value `toml:"bloom_bytes"`
		BatchRows      value `toml:"batch_rows"`
	} `toml:"cold"`
	Maintenance struct {
		Interval          value `toml:"interval"`
		ExpireSnapshots   value `toml:"expire_snapshots"`
		SnapshotRetention value `toml:"snapshot_retention"`
		MinSnapshots      value `toml:"min_snapshots"`
		RemoveOrphans     value `toml:"remove_orphans_after"`
		Compact           value `toml:"compact"`
		CompactManifests  value `toml:"compact_manifests"`
		CompactSmallFiles value `toml:"compact_small_files"`
		MaxClockSkew      value `toml:"max_clock_skew"`
	} `toml:"maintenance"`
	Retention struct {
		Policy     value `toml:"policy"`
		LegalBasis value `toml:"legal_basis"`
		Actor      value `toml:"actor"`
		SubjectKey value `toml:"subject_key"`
	} `toml:"retention"`
	Query struct {
		MemoryLimit value `toml:"memory_limit"`
		Threads     value `toml:"threads"`
		CacheDir    value `toml:"cache_dir"`
		MaxRows     value `toml:"max_rows"`
		MaxResult   value `toml:"max_result_bytes"`
		Timeout     value `toml:"timeout"`
		Digests     value `toml:"verify_digests"`
		DeliveryLag value `toml:"delivery_lag"`
		SystemAge   value `toml:"system_tables_max_age"`
		FooterCache value `toml:"footer_cache_bytes"`
		CacheBytes  value `toml:"cache_bytes"`
	} `toml:"query"`
	Server rawServer  `toml:"server"`
	Table  []rawTable `toml:"table"`
}

// arrays are the arrays of tables of a file, whose elements key paths count.
var arrays = []string{"table", "table.column", "server.token"}

// shape checks that sections are tables and that table, table.column and
// server.token are arrays of tables, which decoding into rawConfig needs.
func (r *reader) shape(tree map[string]any) {
	for name := range known()[""] {
		v, ok := tree[name]
		switch {
		case !ok:
		case name == "table":
			ts, ok := tableArray(v)
			if !ok {
				r.errorf("table", "want an array of tables: [[table]]")
			}
			for i, t := range ts {
				if c, ok := t["column"]; ok {
					if _, ok := tableArray(c); !ok {
						r.errorf(fmt.Sprintf("table[%d].column", i), "want an array of tables: [[table.column]]")
					}
				}
			}
		default:
			m, ok := v.(map[string]any)
			if !ok {
				r.errorf(name, "want a table: [%s]", name)
			}
			if t, ok := m["token"]; ok && name == "server" {
				if _, ok := tableArray(t); !ok {
					r.errorf("server.token", "want an array of tables: [[server.token]]")
				}
			}
		}
	}
}

// tableArray returns v as an array of tables.
func tableArray(v any) ([]map[string]any, bool) {
	switch x := v.(type) {
	case []map[string]any:
		return x, true
	case []any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

// unknown records a problem for every key of the file that rawConfig does
// not have: those the decoder left undecoded, and those it matched only by
// ignoring case. A key below an unknown one is not reported again.
func (r *reader) unknown(undecoded []toml.Key) {
	bad := map[string]bool{}
	for _, k := range undecoded {
		bad[strings.Join(k, ".")] = true
	}
	for _, k := range r.keys {
		for _, seg := range k.key {
			if !lowerName.MatchString(seg) {
				bad[strings.Join(k.key, ".")] = true
			}
		}
	}
	for _, k := range r.keys {
		n := len(k.key)
		if !bad[strings.Join(k.key, ".")] || n > 1 && bad[strings.Join(k.key[:n-1], ".")] {
			continue
		}
		msg := "unknown key"
		if s := suggest(k.key); s != "" {
			msg += fmt.Sprintf("; did you mean %s?", s)
		}
		r.failed[k.path] = true
		r.errs = append(r.errs, &Error{File: r.file, Line: k.line, Key: k.path, Err: errors.New(msg)})
	}
}

// lowerName is the spelling of every key rawConfig has.
var lowerName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// known returns the keys of rawConfig: for each parent path ("" for the
// top level), the set of its keys.
func known() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	var walk func(t reflect.Type, parent string)
	walk = func(t reflect.Type, parent string) {
		out[parent] = map[string]bool{}
		for f := range t.Fields() {
			name := f.Tag.Get("toml")
			out[parent][name] = true
			path := strings.TrimPrefix(parent+"."+name, ".")
			switch ft := f.Type; {
			case ft.Kind() == reflect.Struct && ft != reflect.TypeFor[value]():
				walk(ft, path)
			case ft.Kind() == reflect.Slice:
				walk(ft.Elem(), path)
			}
		}
	}
	walk(reflect.TypeFor[rawConfig](), "")
	return out
}

// suggest returns the known key closest to the unknown k, or "" if none is
// close.
func suggest(k toml.Key) string {
	parent, last := strings.Join(k[:len(k)-1], "."), k[len(k)-1]
	best, bestDist := "", 3
	for name := range known()[parent] {
		d := distance(strings.ToLower(last), name)
		if d < bestDist || d == bestDist && name < best {
			best, bestDist = name, d
		}
	}
	return best
}

// distance returns the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

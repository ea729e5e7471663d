package config

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestProblems checks that each class of problem is reported with the key
// and the line it is about.
func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		key  string // the key of the one problem reported
		line int
		want string // part of its message
	}{
		{"unknown section", "[archiv]\nsettlement_lag = \"45d\"\n", "archiv", 1, "unknown key; did you mean archive?"},
		{"unknown top-level key", "color = \"blue\"\n", "color", 1, "unknown key"},
		{"misspelled nested key", "[archive]\nsettlment_lag = \"45d\"\n", "archive.settlment_lag", 2, "did you mean settlement_lag?"},
		{"key in the wrong case", "[archive]\nSettlement_Lag = \"45d\"\n", "archive.Settlement_Lag", 2, "did you mean settlement_lag?"},
		{"misspelled table key", "[[table]]\nname = \"a\"\n[[table]]\nname = \"b\"\nwidht = \"daily\"\n", "table[1].widht", 5, "did you mean width?"},
		{"misspelled column key", "[[table]]\nname = \"a\"\n  [[table.column]]\n  name = \"x\"\n  [[table.column]]\n  name = \"y\"\n  idenity = true\n", "table[0].column[1].idenity", 7, "did you mean identity?"},
		{"unitless duration string", "[archive]\nsettlement_lag = \"45\"\n", "archive.settlement_lag", 2, "duration 45 has no unit; write 45d"},
		{"unitless duration integer", "[archive]\nsettlement_lag = 45\n", "archive.settlement_lag", 2, "duration 45 has no unit; write 45d"},
		{"unitless timeout", "[hot]\nddl_lock_timeout = 3\n", "hot.ddl_lock_timeout", 2, "write 3s"},
		{"negative duration", "[archive]\nreader_grace = \"-1h\"\n", "archive.reader_grace", 2, "negative duration"},
		{"bad duration", "[maintenance]\ninterval = \"15 minutes\"\n", "maintenance.interval", 2, "invalid duration"},
		{"duration of the wrong type", "[maintenance]\ninterval = true\n", "maintenance.interval", 2, "want a duration"},
		{"zero result bytes", "[query]\nmax_result_bytes = 0\n", "query.max_result_bytes", 2, "want at least"},
		{"zero cache bytes", "[query]\ncache_bytes = 0\n", "query.cache_bytes", 2, "want at least"},
		{"unitless query timeout", "[query]\ntimeout = 300\n", "query.timeout", 2, "write 300s"},
		{"zero interval", "[maintenance]\ninterval = \"0s\"\n", "maintenance.interval", 2, "positive"},
		{"unresolved variable", "\n[postgres]\nurl = \"postgres://${PGUSER}@db/x\"\n", "postgres.url", 3, "environment variable PGUSER is not set"},
		{"settlement lag shorter than the step", "[archive]\nsettlement_lag = \"1d\"\narchival_step = \"2d\"\n", "archive.settlement_lag", 2, "shorter than archive.archival_step 2d"},
		{"step of part of a day", "[archive]\narchival_step = \"36h\"\n", "archive.archival_step", 2, "whole number of days"},
		{"monthly table with daily step", "[[table]]\nname = \"monthly\"\nwidth = \"monthly\"\nresolutions = [\"P1M\"]\n", "table[0].width", 3, "at least 31d, not 1d"},
		{"windows that never catch up", "[archive]\nmax_windows_per_cycle = 1\n[maintenance]\ninterval = \"36h\"\n[[table]]\nname = \"a\"\nheadroom = \"2d\"\n", "archive.max_windows_per_cycle", 2, "never catch up"},
		{"bad time model", "[[table]]\nname = \"a\"\ntime_model = \"range\"\n", "table[0].time_model", 3, `want "interval" or "point"`},
		{"bad width", "[[table]]\nname = \"a\"\nwidth = \"weekly\"\n", "table[0].width", 3, `want "daily" or "monthly"`},
		{"bad commodity", "[[table]]\nname = \"a\"\ncommodity = \"Strom\"\n", "table[0].commodity", 3, "want STROM, GAS, WAERME or WASSER"},
		{"bad resolution", "[[table]]\nname = \"a\"\nresolutions = [\"PT15M\", \"PT60M\"]\n", "table[0].resolutions", 3, `"PT60M": want PT5M, PT15M, PT30M, PT1H, P1D, P1M or P1Y`},
		{"resolution twice", "[[table]]\nname = \"a\"\nresolutions = [\"PT15M\", \"PT15M\"]\n", "table[0].resolutions", 3, "listed twice"},
		{"point table with resolutions", "[[table]]\nname = \"a\"\ntime_model = \"point\"\nresolutions = [\"PT15M\"]\n", "table[0].resolutions", 4, "a point table has no resolutions"},
		{"bad integrity", "[[table]]\nname = \"a\"\nintegrity = \"gist\"\n", "table[0].integrity", 3, "want one of auto, exclusion, statement, write"},
		{"integrity and exclusion", "[[table]]\nname = \"a\"\nintegrity = \"write\"\nexclusion = false\n", "table[0].exclusion", 4, "not both"},
		{"integrity statement of several resolutions", "[[table]]\nname = \"a\"\nresolutions = [\"PT15M\", \"PT1H\"]\nintegrity = \"statement\"\n", "table[0].integrity", 4, "one resolution of fixed length"},
		{"short subject key", "[retention]\nsubject_key = \"short\"\n", "retention.subject_key", 2, "want at least 32"},
		{"bad column type", "[[table]]\nname = \"a\"\n[[table.column]]\nname = \"x\"\ntype = \"int\"\n", "table[0].column[0].type", 5, `want "text" or "bigint"`},
		{"bad isolation", "[catalog]\nisolation = \"repeatable_read\"\n", "catalog.isolation", 2, `want "read_committed" or "serializable"`},
		{"bad log", "[catalog]\nlog = \"etcd\"\n", "catalog.log", 2, `want "postgres" or "object_store"`},
		{"bad catalog type", "[catalog]\ntype = \"hive\"\n", "catalog.type", 2, `want "log", "rest" or "sql"`},
		{"rest catalog without a URL", "[catalog]\ntype = \"rest\"\nuri = \"localhost:8181\"\n", "catalog.uri", 3, "needs an http or https URL"},
		{"serializable object store", "[catalog]\nlog = \"object_store\"\nisolation = \"serializable\"\n", "catalog.isolation", 3, "postgres log only"},
		{"bad retention policy", "[retention]\npolicy = \"years:3\"\n", "retention.policy", 2, "calendar_years:N or rolling:<duration>"},
		{"retention of no years", "[retention]\npolicy = \"calendar_years:0\"\n", "retention.policy", 2, "at least 1"},
		{"retention without legal basis", "[retention]\npolicy = \"calendar_years:3\"\nlegal_basis = \" \"\n", "retention.legal_basis", 3, "legal basis"},
		{"retention without actor", "[retention]\npolicy = \"rolling:1095d\"\nactor = \"\"\n", "retention.actor", 3, "actor"},
		{"duplicate table", "[[table]]\nname = \"power\"\n[[table]]\nname = \"gas\"\n[[table]]\nname = \"power\"\n", "table[2].name", 6, `table "power" is declared twice (first as table[0], line 2)`},
		{"table without name", "[[table]]\nwidth = \"daily\"\n", "table[0].name", 1, "required"},
		{"reserved table name", "[[table]]\nname = \"hot_tables\"\n", "table[0].name", 2, "reserved"},
		{"table name of the log", "[[table]]\nname = \"consensus\"\n", "table[0].name", 2, "the catalog's log"},
		{"built-in column", "[[table]]\nname = \"a\"\n[[table.column]]\nname = \"value\"\n", "table[0].column[0].name", 4, "built in"},
		{"column twice", "[[table]]\nname = \"a\"\n[[table.column]]\nname = \"x\"\n[[table.column]]\nname = \"x\"\n", "table[0].column[1].name", 6, "declared twice"},
		{"bad coded value", "[[table]]\nname = \"a\"\n[[table.column]]\nname = \"n\"\ntype = \"bigint\"\nvalues = [\"01\"]\n", "table[0].column[0].values", 6, `coded value "01"`},
		{"headroom shorter than the interval", "[[table]]\nname = \"a\"\nheadroom = \"10m\"\n", "table[0].headroom", 3, "shorter than maintenance.interval 15m"},
		{"min snapshots", "[maintenance]\nmin_snapshots = 0\n", "maintenance.min_snapshots", 2, "want 1 to 1000000"},
		{"zstd level", "[cold]\nzstd_level = 23\n", "cold.zstd_level", 2, "want 1 to 22"},
		{"bad size", "[cold]\ntarget_file_size = \"256XB\"\n", "cold.target_file_size", 2, "unknown unit"},
		{"bloom too small", "[cold]\nbloom_bytes = 16\n", "cold.bloom_bytes", 2, "want at least 32B"},
		{"integer of the wrong type", "[query]\nthreads = \"2\"\n", "query.threads", 2, "want an integer, not a string"},
		{"sub-millisecond lock timeout", "[hot]\nddl_lock_timeout = \"500us\"\n", "hot.ddl_lock_timeout", 2, "milliseconds"},
		{"zero accept horizon", "[hot]\naccept_ahead = \"0s\"\n", "hot.accept_ahead", 2, "positive"},
		{"accept horizon of decades", "[hot]\naccept_ahead = \"4000d\"\n", "hot.accept_ahead", 2, "at most 1096d"},
		{"bad schema", "[postgres]\nschema = \"Meter-Store\"\n", "postgres.schema", 2, "lowercase"},
		{"relative warehouse without scheme", "[warehouse]\nurl = \"warehouse\"\n", "warehouse.url", 2, "want a URL"},
		{"unknown warehouse scheme", "[warehouse]\nurl = \"ftp://host/x\"\n", "warehouse.url", 2, `scheme "ftp"`},
		{"section of the wrong shape", "archive = 3\n", "archive", 1, "want a table: [archive]"},
		{"table not an array", "[table]\nname = \"a\"\n", "table", 1, "want an array of tables: [[table]]"},
		{"column not an array", "[[table]]\nname = \"a\"\n[table.column]\nname = \"x\"\n", "table[0].column", 3, "[[table.column]]"},
		{"syntax", "[archive]\nsettlement_lag = \"45d\"\nchunk_rows = = 3\n", "", 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := problems(t, tc.src)
			if len(es) != 1 {
				t.Fatalf("problems = %v; want one", es)
			}
			e := es[0]
			if e.Key != tc.key || e.Line != tc.line || !strings.Contains(e.Error(), tc.want) {
				t.Errorf("problem = %q (key %q, line %d); want key %q, line %d, containing %q", e, e.Key, e.Line, tc.key, tc.line, tc.want)
			}
		})
	}
}

// TestProblemsCollected checks that a file's problems are all reported,
// in the order of their lines.
func TestProblemsCollected(t *testing.T) {
	es := problems(t, `[archive]
settlement_lag = 45
archival_step = "1x"
[postgres]
url = "${NOPE}"
[[table]]
name = "power"
commodity = "ELECTRICITY"
[[table]]
name = "power"
`)
	var got []string
	for _, e := range es {
		got = append(got, e.Key)
	}
	want := []string{"archive.settlement_lag", "archive.archival_step", "postgres.url", "table[0].commodity", "table[1].name"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems at %v; want %v\n%v", got, want, es)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Line < es[i-1].Line {
			t.Errorf("problems out of line order: %v", es)
		}
	}
}

func TestSyntaxError(t *testing.T) {
	es := problems(t, "[archive]\nsettlement_lag = \"45d\n")
	var pe toml.ParseError
	if len(es) != 1 || es[0].Line != 2 || !errors.As(es[0], &pe) {
		t.Fatalf("problems = %v; want one at line 2 wrapping a toml.ParseError", es)
	}
	if s := es[0].Error(); !strings.HasPrefix(s, "config: line 2: ") {
		t.Errorf("Error() = %q", s)
	}
}

// TestLinesMatchDecoder checks the lines found by scanning the source
// against the positions the toml decoder reports, for every key of the
// template outside an array of tables (where the decoder keeps only the
// last element's).
func TestLinesMatchDecoder(t *testing.T) {
	src := Template()
	var tree map[string]any
	md, err := toml.Decode(src, &tree)
	if err != nil {
		t.Fatal(err)
	}
	var sections map[string]map[string]toml.Primitive
	i := strings.Index(src, "\n[[table]]\n")
	md2, err := toml.Decode(src[:i], &sections)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, k := range locate(src, md.Keys(), arrays...) {
		lines[k.path] = k.line
	}
	n := 0
	for name, keys := range sections {
		for key, p := range keys {
			var pe toml.ParseError
			if !errors.As(md2.PrimitiveDecode(p, &failText{}), &pe) {
				continue // an array: no position in the error
			}
			n++
			if got := lines[name+"."+key]; got != pe.Position.Line {
				t.Errorf("%s.%s: line %d; the decoder says %d", name, key, got, pe.Position.Line)
			}
		}
	}
	if n < 20 {
		t.Errorf("compared only %d keys", n)
	}
	for _, k := range []struct {
		path string
		text string
	}{{"table[0]", "[[table]]"}, {"table[1].name", `name = "gas"`}, {"table[1].integrity", `integrity = "auto"`}} {
		line := strings.Split(src, "\n")[lines[k.path]-1]
		if lines[k.path] == 0 || !strings.HasPrefix(line, k.text) {
			t.Errorf("%s: line %d is %q; want %q", k.path, lines[k.path], line, k.text)
		}
	}
}

// failText refuses every value, so that the decoder reports its position.
type failText struct{}

func (*failText) UnmarshalText([]byte) error { return errors.New("position probe") }

func TestLocateSkipsValues(t *testing.T) {
	src := `a = """
b = 1
"""
c = [
  [1, 2],
  "d = 3",
]
e = { f = 1, g = "h = 2" } # i = 3
[[table]]
name = 'x'
  [[table.column]]
  name = "y"
[[table]]
  [[table.column]]
  "name" = "z"
`
	var tree map[string]any
	md, err := toml.Decode(src, &tree)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range locate(src, md.Keys(), arrays...) {
		got = append(got, k.path+":"+strconv.Itoa(k.line))
	}
	want := []string{"a:1", "c:4", "e:8", "e.f:8", "e.g:8", "table[0]:9", "table[0].name:10", "table[0].column[0]:11",
		"table[0].column[0].name:12", "table[1]:13", "table[1].column[0]:14", "table[1].column[0].name:15"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("located\n%v\nwant\n%v", got, want)
	}
}

package pgwire

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/store"
)

// A setting is a session setting a client may SHOW, and SET if check
// is not nil: check returns the value to keep or refuses it.
type setting struct {
	name     string // as SHOW ALL names it
	def      string
	reported bool // sent in ParameterStatus at startup and on change
	check    func(string) (string, error)
	desc     string
}

// The session settings. Those a client cannot change report what
// MeterStore is: UTF8, ISO dates, UTC, read-only.
var knownSettings = []setting{
	{name: "application_name", reported: true, check: anyValue, desc: "the client's name"},
	{name: "client_encoding", def: "UTF8", reported: true, check: encoding, desc: "the client's character set"},
	{name: "DateStyle", def: "ISO, MDY", reported: true, check: dateStyle, desc: "the display of dates"},
	{name: "IntervalStyle", def: "postgres", reported: true, check: only("postgres"), desc: "the display of intervals"},
	{name: "TimeZone", def: "UTC", reported: true, check: timeZone, desc: "the time zone of timestamps: UTC"},
	{name: "extra_float_digits", def: "1", check: floatDigits, desc: "ignored: floats are sent in their shortest exact form"},
	{name: "statement_timeout", def: "0", check: duration, desc: "the longest a statement may run, 0 for no bound beyond query.timeout"},
	{name: "meterstore.mode", def: "auto", check: readMode, desc: "the tiers statements read: auto, historical or operational"},
	{name: "server_version", reported: true, desc: "the PostgreSQL version whose behaviour the server follows"},
	{name: "server_encoding", def: "UTF8", reported: true},
	{name: "integer_datetimes", def: "on", reported: true},
	{name: "standard_conforming_strings", def: "on", reported: true, check: only("on")},
	{name: "is_superuser", def: "off", reported: true},
	{name: "session_authorization", reported: true},
	{name: "default_transaction_read_only", def: "on", check: only("on")},
	{name: "transaction_read_only", def: "on"},
	{name: "transaction_isolation", def: "repeatable read", desc: "each statement reads a snapshot of its own"},
	{name: "max_identifier_length", def: "63"},
	{name: "meterstore.watermark", desc: "the watermark of each table the last statement read"},
	{name: "meterstore.tiers", desc: "the tiers of each table the last statement read"},
}

// settingOf returns the known setting of name, case-insensitively.
func settingOf(name string) (*setting, bool) {
	for i := range knownSettings {
		if strings.EqualFold(knownSettings[i].name, name) {
			return &knownSettings[i], true
		}
	}
	return nil, false
}

// settings are a session's values of the settings: its own, and those
// SET LOCAL made for the transaction block.
type settings struct {
	vals  map[string]string // by setting name
	local map[string]string
}

// newSettings returns the settings of a session of user on a server of
// version.
func newSettings(user, version string) *settings {
	st := &settings{vals: map[string]string{}}
	for _, k := range knownSettings {
		st.vals[k.name] = k.def
	}
	st.vals["server_version"] = version
	st.vals["session_authorization"] = user
	return st
}

// startup applies the settings of a startup message, and returns a
// notice for each that is kept at its value: a client's time zone or
// date style other than MeterStore's does not end its session, and the
// notice says what it gets.
func (st *settings) startup(params map[string]string) (notices []string) {
	params, notices = withOptions(params)
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		k, ok := settingOf(n)
		switch {
		case !ok && (n == "user" || n == "database" || n == "options" || n == "replication"):
			continue
		case !ok:
			notices = append(notices, fmt.Sprintf("the setting %q is not known: it is ignored", n))
			continue
		case k.check == nil:
			continue // reported by the server, not set by the client
		}
		v, err := k.check(params[n])
		if err != nil {
			notices = append(notices, fmt.Sprintf("%s %q is not taken, it stays %q: %v", k.name, params[n], st.vals[k.name], err))
			continue
		}
		st.vals[k.name] = v
	}
	return notices
}

// withOptions returns params with the settings of its "options" (libpq's
// PGOPTIONS, pgjdbc's options: "-c name=value" or "--name=value", a
// backslash escaping a space) added, and a notice for each word it does
// not take.
func withOptions(params map[string]string) (map[string]string, []string) {
	opts, ok := params["options"]
	if !ok {
		return params, nil
	}
	var words []string
	var cur strings.Builder
	for i := 0; i < len(opts); i++ {
		switch c := opts[i]; {
		case c == '\\' && i+1 < len(opts):
			i++
			cur.WriteByte(opts[i])
		case c == ' ' || c == '\t':
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	out := maps.Clone(params)
	var notices []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-c" && i+1 < len(words):
			i++
			w = words[i]
		case strings.HasPrefix(w, "--"):
			w = w[2:]
		case strings.HasPrefix(w, "-c"):
			w = w[2:]
		default:
			notices = append(notices, fmt.Sprintf("the startup option %q is not taken: only -c name=value", w))
			continue
		}
		name, value, ok := strings.Cut(w, "=")
		if !ok {
			notices = append(notices, fmt.Sprintf("the startup option %q is not taken: want name=value", w))
			continue
		}
		out[name] = value
	}
	return out, notices
}

// reported returns the reported settings and their values.
func (st *settings) reported() [][2]string {
	var out [][2]string
	for _, k := range knownSettings {
		if k.reported {
			out = append(out, [2]string{k.name, st.get(k.name)})
		}
	}
	return out
}

// get returns the value of the setting name.
func (st *settings) get(name string) string {
	if v, ok := st.local[name]; ok {
		return v
	}
	return st.vals[name]
}

// check checks value for the setting name and returns the setting and
// the value to keep.
func (st *settings) check(name, value string) (*setting, string, error) {
	k, ok := settingOf(name)
	if !ok {
		return nil, "", errorf(codeUndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if k.check == nil {
		return nil, "", errorf(codeCantChangeParam, "parameter %q cannot be changed", k.name)
	}
	v, err := k.check(value)
	if err != nil {
		return nil, "", errorf(codeInvalidParamValue, "invalid value for parameter %q: %q: %v", k.name, value, err)
	}
	return k, v, nil
}

// apply sets k to v, checked, for the session or (local) for the
// transaction block.
func (st *settings) apply(k *setting, v string, local bool) {
	if local {
		if st.local == nil {
			st.local = map[string]string{}
		}
		st.local[k.name] = v
		return
	}
	st.vals[k.name] = v
	delete(st.local, k.name)
}

// reset sets the setting of name back to its default.
func (st *settings) reset(name string) (*setting, error) {
	k, ok := settingOf(name)
	if !ok {
		return nil, errorf(codeUndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if k.check == nil {
		return nil, errorf(codeCantChangeParam, "parameter %q cannot be changed", k.name)
	}
	st.vals[k.name] = k.def
	delete(st.local, k.name)
	return k, nil
}

// resetAll sets every setting a client may change back to its default.
func (st *settings) resetAll() {
	for _, k := range knownSettings {
		if k.check != nil {
			st.vals[k.name] = k.def
		}
	}
	st.local = nil
}

// endBlock drops what SET LOCAL set.
func (st *settings) endBlock() { st.local = nil }

// statementTimeout returns statement_timeout, 0 for none.
func (st *settings) statementTimeout() time.Duration {
	d, _ := parseDuration(st.get("statement_timeout"))
	return d
}

// mode returns the read mode of meterstore.mode.
func (st *settings) mode() store.ReadMode {
	m, _ := store.ParseReadMode(st.get("meterstore.mode"))
	return m
}

func anyValue(v string) (string, error) { return v, nil }

// only returns the check of a setting that takes one value.
func only(want string) func(string) (string, error) {
	return func(v string) (string, error) {
		if !strings.EqualFold(v, want) {
			return "", fmt.Errorf("only %s is supported", want)
		}
		return want, nil
	}
}

// encoding takes UTF8 and SQL_ASCII (bytes as they are), under their
// names PostgreSQL takes.
func encoding(v string) (string, error) {
	switch strings.ToUpper(strings.ReplaceAll(strings.ReplaceAll(v, "-", ""), "_", "")) {
	case "UTF8", "UNICODE":
		return "UTF8", nil
	case "SQLASCII":
		return "SQL_ASCII", nil
	}
	return "", fmt.Errorf("MeterStore speaks UTF8")
}

// dateStyle takes the ISO output style with any order.
func dateStyle(v string) (string, error) {
	parts := strings.Split(v, ",")
	order := "MDY"
	for _, p := range parts {
		switch p = strings.ToUpper(strings.TrimSpace(p)); p {
		case "ISO", "":
		case "MDY", "DMY", "YMD", "US", "EURO", "EUROPEAN", "NONEURO", "NONEUROPEAN":
			order = map[string]string{"US": "MDY", "NONEURO": "MDY", "NONEUROPEAN": "MDY", "EURO": "DMY", "EUROPEAN": "DMY"}[p]
			if order == "" {
				order = p
			}
		default:
			return "", fmt.Errorf("dates are sent in the ISO style")
		}
	}
	return "ISO, " + order, nil
}

// timeZone takes UTC under its names: statements compute in UTC.
func timeZone(v string) (string, error) {
	switch strings.ToUpper(v) {
	case "UTC", "ETC/UTC", "UCT", "ZULU", "Z", "GMT", "ETC/GMT", "+00", "+00:00", "0":
		return "UTC", nil
	}
	return "", fmt.Errorf("statements compute in UTC, and timestamps with time zone are sent with their offset: set TimeZone to UTC")
}

func floatDigits(v string) (string, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < -15 || n > 3 {
		return "", fmt.Errorf("want an integer from -15 to 3")
	}
	return strconv.Itoa(n), nil
}

func duration(v string) (string, error) {
	d, err := parseDuration(v)
	if err != nil {
		return "", err
	}
	if d == 0 {
		return "0", nil
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms", nil
}

// parseDuration reads a duration as PostgreSQL takes statement_timeout:
// milliseconds, or a number with a unit.
func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := v, "ms"
	if i >= 0 {
		num, unit = v[:i], strings.TrimSpace(v[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("want milliseconds, or a number with a unit (ms, s, min, h)")
	}
	scale := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "min": time.Minute, "h": time.Hour}[unit]
	if scale == 0 {
		return 0, fmt.Errorf("unit %q: want ms, s, min or h", unit)
	}
	return time.Duration(f * float64(scale)), nil
}

func readMode(v string) (string, error) {
	m, err := store.ParseReadMode(v)
	if err != nil {
		return "", fmt.Errorf("want auto, historical or operational")
	}
	return m.String(), nil
}

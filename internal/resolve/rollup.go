package resolve

// RollupSQL returns the rows of relation (a quoted name) that hold in a
// table written as appends of higher versions of whole groups, as the
// daily rollup is: of each group of rows sharing the columns key, those
// of its highest column version; the columns cols of them.
func RollupSQL(d Dialect, relation string, cols, key []string, version string) string {
	top := d.Ident("_meterstore_top")
	return `SELECT ` + d.list("", cols) + ` FROM (SELECT ` + d.list("", cols) + `, ` + d.Ident(version) + `, max(` + d.Ident(version) +
		`) OVER (PARTITION BY ` + d.list("", key) + `) AS ` + top + ` FROM ` + relation + `) AS r WHERE ` + d.Ident(version) + ` = ` + top
}

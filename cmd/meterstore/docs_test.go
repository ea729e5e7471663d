package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The documents whose snippets the foreign-engine tests run, relative to
// this package's directory, and the placeholders the snippets use for
// serve's address and a token's secret.
const (
	readmeDoc   = "../../README.md"
	foreignDoc  = "../../docs/foreign-engines.md"
	docServer   = "https://host:8443"
	docSecret   = "<token>"
	docTrinoDir = "# etc/catalog/"
)

// docBlock returns the indented code block of the Markdown file path that
// starts with a line beginning with first, without its indentation. It
// fails t unless there is exactly one.
func docBlock(t *testing.T, path, first string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	var cur []string
	for _, l := range append(strings.Split(string(data), "\n"), "") {
		if s, ok := strings.CutPrefix(l, "    "); ok {
			cur = append(cur, s)
			continue
		}
		if len(cur) > 0 && strings.HasPrefix(cur[0], first) {
			blocks = append(blocks, cur)
		}
		cur = nil
	}
	if len(blocks) != 1 {
		t.Fatalf("%s: %d code blocks start with %q, want 1", filepath.Base(path), len(blocks), first)
	}
	return strings.Join(blocks[0], "\n")
}

// docText returns block with serve's address and the token's secret in
// place of the documents' placeholders.
func docText(block, base, secret string) string {
	return strings.NewReplacer(docServer, base, docSecret, secret).Replace(block)
}

// docCatalogName is the server.catalog_name the [server] block of
// docs/foreign-engines.md sets.
func docCatalogName(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^catalog_name = "([a-z][a-z0-9_]*)"$`).FindStringSubmatch(docBlock(t, foreignDoc, "[server]"))
	if m == nil {
		t.Fatalf("%s: the [server] block sets no catalog_name", foreignDoc)
	}
	return m[1]
}

// docTrinoCatalog returns the name and the properties of README.md's Trino
// catalog file ("# etc/catalog/<name>.properties", then key=value lines),
// with serve at base and the token's secret.
func docTrinoCatalog(t *testing.T, base, secret string) (string, map[string]string) {
	t.Helper()
	lines := strings.Split(docText(docBlock(t, readmeDoc, docTrinoDir), base, secret), "\n")
	name, ok := strings.CutSuffix(strings.TrimPrefix(lines[0], docTrinoDir), ".properties")
	if !ok {
		t.Fatalf("README.md: the Trino catalog file is %q", lines[0])
	}
	props := map[string]string{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("README.md: Trino catalog file line %q", l)
		}
		props[k] = v
	}
	return name, props
}

// docSparkConf returns docs/foreign-engines.md's Spark settings
// (spark-defaults.conf lines: a key, blanks, a value), with serve at base
// and the token's secret, and the name of the catalog they configure.
func docSparkConf(t *testing.T, base, secret string) (string, map[string]string) {
	t.Helper()
	conf := map[string]string{}
	var catalog string
	for _, l := range strings.Split(docText(docBlock(t, foreignDoc, "spark.sql.catalog."), base, secret), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("foreign-engines.md: Spark setting %q", l)
		}
		conf[f[0]] = f[1]
		if name, ok := strings.CutPrefix(f[0], "spark.sql.catalog."); ok && !strings.Contains(name, ".") {
			catalog = name
		}
	}
	if catalog == "" {
		t.Fatal("foreign-engines.md: the Spark settings name no catalog")
	}
	return catalog, conf
}

// TestDocSnippets checks, without the engines, that the snippets the
// foreign-engine tests run are where they look for them and agree: the
// Trino catalog file of README.md is docs/foreign-engines.md's, named as
// server.catalog_name and trinoCatalog; Spark's catalog has that name;
// every server.catalog_name the two documents mention is it.
func TestDocSnippets(t *testing.T) {
	name := docCatalogName(t)
	if a, b := docBlock(t, readmeDoc, docTrinoDir), docBlock(t, foreignDoc, docTrinoDir); a != b {
		t.Errorf("README.md's Trino catalog file:\n%s\ndocs/foreign-engines.md's:\n%s", a, b)
	}
	trino, props := docTrinoCatalog(t, "http://127.0.0.1:1", "secret")
	if trino != name || trino != trinoCatalog {
		t.Errorf("the Trino catalog file is named %q, server.catalog_name %q, the tests' catalog %q", trino, name, trinoCatalog)
	}
	if props["iceberg.rest-catalog.uri"] != "http://127.0.0.1:1/iceberg" {
		t.Errorf("the Trino catalog file's URI: %q", props["iceberg.rest-catalog.uri"])
	}
	spark, conf := docSparkConf(t, "http://127.0.0.1:1", "secret")
	if spark != name || conf["spark.sql.catalog."+spark+".uri"] != "http://127.0.0.1:1/iceberg" {
		t.Errorf("Spark's catalog %q (uri %q); server.catalog_name %q", spark, conf["spark.sql.catalog."+spark+".uri"], name)
	}
	mention := regexp.MustCompile(`server\.catalog_name\s*=\s*"([^"]*)"`)
	for _, doc := range []string{readmeDoc, foreignDoc} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mention.FindAllStringSubmatch(strings.ReplaceAll(string(data), "\n", " "), -1) {
			if m[1] != name {
				t.Errorf("%s mentions server.catalog_name = %q, not %q", filepath.Base(doc), m[1], name)
			}
		}
	}
	docBlock(t, foreignDoc, "CREATE SECRET")
}

// TestLayoutDoc: every package of the module is in docs/layout.md's table,
// and each imports only packages of its row and the rows above it, as the
// document says.
func TestLayoutDoc(t *testing.T) {
	const mod = "github.com/meterstore/meterstore/"
	data, err := os.ReadFile("../../docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		p := strings.TrimPrefix(f[0], mod)
		imports[p] = nil
		for _, i := range f[1:] {
			if q, ok := strings.CutPrefix(i, mod); ok {
				imports[p] = append(imports[p], q)
			}
		}
	}
	row := map[string]int{}
	name := regexp.MustCompile("`([^`]+)`")
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		cells := strings.Split(l, " | ")
		if !strings.HasPrefix(l, "| `") || len(cells) < 2 {
			continue
		}
		n++
		for _, m := range name.FindAllStringSubmatch(cells[0], -1) {
			prefix, wild := strings.CutSuffix(m[1], "/...")
			for p := range imports {
				if p == m[1] || wild && strings.HasPrefix(p, prefix+"/") {
					row[p] = n
				}
			}
		}
	}
	for p, is := range imports {
		r, ok := row[p]
		if !ok {
			t.Errorf("layout.md: %s is not in the table", p)
			continue
		}
		for _, i := range is {
			if row[i] > r {
				t.Errorf("layout.md: %s (row %d) imports %s, of row %d below it", p, r, i, row[i])
			}
		}
	}
}

// TestServingDoc: every path of the HTTP API's OpenAPI document has a
// subsection of docs/serving.md, the catalog's all one.
func TestServingDoc(t *testing.T) {
	api, err := os.ReadFile("internal/server/httpapi/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/serving.md")
	if err != nil {
		t.Fatal(err)
	}
	var headings []string
	for _, l := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(l, "### "); ok {
			headings = append(headings, h)
		}
	}
	paths := regexp.MustCompile(`(?m)^  (/\S*):$`).FindAllStringSubmatch(string(api), -1)
	if len(paths) == 0 {
		t.Fatal("openapi.yaml: no paths")
	}
	for _, m := range paths {
		p := m[1]
		if strings.HasPrefix(p, "/iceberg/") {
			p = "/iceberg/v1/..."
		}
		if !slices.ContainsFunc(headings, func(h string) bool {
			return strings.Contains(h, " "+p+"`") || strings.Contains(h, "`"+p+"`") || strings.Contains(h, " "+p+"?")
		}) {
			t.Errorf("serving.md has no subsection for %s", m[1])
		}
	}
}

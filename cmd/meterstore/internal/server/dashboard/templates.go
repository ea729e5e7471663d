package dashboard

import (
	"bytes"
	"html/template"
	"net/http"
)

// style is the page's only style sheet, inline: the page loads nothing
// from anywhere.
const style = `<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1f2328;background:#fff}
h1{font-size:20px;margin:0 0 .2em}h2{font-size:17px;margin:.2em 0}
.meta{color:#59636e}.table{border:1px solid #d1d9e0;border-radius:6px;padding:1em;margin:1em 0}
.state{display:inline-block;padding:.1em .6em;border-radius:1em;font-weight:600;color:#fff}
.state-healthy{background:#2da44e}.state-unhealthy{background:#bf8700}.state-quarantined{background:#cf222e}
.reason{background:#fff8c5;border-left:4px solid #bf8700;padding:.4em .6em;white-space:pre-wrap;word-break:break-word}
.state-quarantined~.reason,.quarantined .reason{background:#ffebe9;border-color:#cf222e}
dl.nums{display:grid;grid-template-columns:repeat(4,auto);gap:.2em 1.2em;justify-content:start}
dl.nums dt{color:#59636e}dl.nums dd{margin:0;font-weight:600}.bad{color:#cf222e}
.charts{display:flex;flex-wrap:wrap;gap:.8em}.chart{border:1px solid #eef0f2;background:#fcfcfd}
.ct{font-size:12px;font-weight:600;fill:#1f2328}.xl,.yl{font-size:10px;fill:#59636e}.axis{stroke:#8c959f}
table.windows{border-collapse:collapse;font-size:12px;margin-top:.6em}table.windows td,table.windows th{border-bottom:1px solid #eef0f2;padding:.15em .6em;text-align:left}
.err{color:#cf222e}form.inline{display:inline}
</style>`

var funcs = template.FuncMap{"style": func() template.HTML { return style }}

var pageTmpl = template.Must(template.New("page").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MeterStore dashboard</title>
<meta name="viewport" content="width=device-width,initial-scale=1">{{style}}</head>
<body>
<header><h1>MeterStore</h1>
<p class="meta">status at {{.Now}} · history and completeness of the last {{.Days}} days, from {{.From}} ·
<form class="inline" method="post" action="{{.Logout}}"><button type="submit">Log out</button></form></p></header>
{{range .Tables}}
<section class="table {{.State}}" id="table-{{.Name}}" data-table="{{.Name}}" data-state="{{.State}}" data-archived="{{.Archived}}">
<h2>{{.Name}} <span class="state state-{{.State}}">{{.State}}</span></h2>
{{if .Reason}}<p class="reason" data-reason>{{.Reason}}</p>{{end}}
<dl class="nums">
<dt>watermark</dt><dd class="watermark">{{if .Archived}}archived up to {{.Watermark}}{{else}}nothing archived yet{{end}}</dd>
<dt>watermark lag</dt><dd>{{if .Archived}}{{.Lag}}{{else}}–{{end}}</dd>
<dt>hot partitions</dt><dd>{{.HotPartitions}}</dd>
<dt>partitions ahead</dt><dd{{if eq .PartitionsAhead 0}} class="bad"{{end}}>{{.PartitionsAhead}}</dd>
<dt>invariant violations</dt><dd{{if ne .InvariantViolations 0}} class="bad"{{end}}>{{.InvariantViolations}}</dd>
<dt>mirror forks</dt><dd{{if gt .MirrorForks 0}} class="bad"{{end}}>{{.MirrorForks}}</dd>
<dt>intervals expected / present</dt><dd>{{.Expected}} / {{.Present}}</dd>
<dt>missing / surplus</dt><dd{{if gt .Missing 0}} class="bad"{{end}}>{{.Missing}} / {{.Surplus}}{{if gt .NotDue 0}} <span class="note" data-not-due="{{.NotDue}}">({{.NotDue}} series-days not due yet, not counted)</span>{{end}}</dd>
</dl>
<div class="charts">
{{if .HistoryError}}<p class="err">history: {{.HistoryError}}</p>{{else}}{{.LagChart}}{{.RowsChart}}{{.DurationChart}}{{end}}
{{if .CompletenessError}}<p class="err">completeness: {{.CompletenessError}}</p>{{else}}{{.CompletenessChart}}{{end}}
</div>
{{if .Windows}}<table class="windows"><caption>latest commits of the cold tier</caption>
<tr><th>committed</th><th>commit</th><th>window</th><th>watermark after</th><th>rows</th><th>late rows</th><th>write duration</th></tr>
{{range .Windows}}<tr><td>{{.CommittedAt}}</td><td class="kind">{{.Kind}}</td><td>{{.Window}}</td><td>{{.Watermark}}</td><td>{{.Rows}}</td><td>{{.LateRows}}</td><td>{{.Duration}}</td></tr>
{{end}}</table>{{end}}
</section>
{{else}}<p>No tables are declared.</p>
{{end}}
</body></html>
`))

var loginTmpl = template.Must(template.New("login").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MeterStore dashboard: log in</title>{{style}}</head>
<body><h1>MeterStore</h1>
<form method="post" action="{{.Action}}">
<p><label for="token">A token with the admin scope</label><br>
<input id="token" name="token" type="password" autocomplete="current-password" size="48" required autofocus></p>
{{if .Message}}<p class="err" role="alert">{{.Message}}</p>{{end}}
<p><button type="submit">Log in</button></p>
</form></body></html>
`))

var errorTmpl = template.Must(template.New("error").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MeterStore dashboard: {{.Status}}</title>{{style}}</head>
<body><h1>MeterStore</h1><p class="err">{{.Message}}</p><p><a href="{{.Login}}">Log in</a></p></body></html>
`))

// render executes t into a buffer first, so that a failing template
// answers 500 rather than half a page.
func render(w http.ResponseWriter, status int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Nothing is loaded from anywhere, and no script runs.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

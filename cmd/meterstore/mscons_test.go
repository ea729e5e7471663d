package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// msconsMessage writes one MSCONS 2.4c message (UNH to UNT) with every
// quarter hour of Berlin day d for market location malo, dated in Berlin
// local time with its offset, values from value.
func msconsMessage(ref, doc, docTime, malo string, d metering.Date, qualifier string, value func(i int) string) string {
	cal, _ := metering.NewCalendar()
	loc := cal.Location()
	stamp := func(t time.Time) string {
		lt := t.In(loc)
		_, off := lt.Zone()
		return fmt.Sprintf("%s?+%02d", lt.Format("200601021504"), off/3600)
	}
	segs := []string{
		"UNH+" + ref + "+MSCONS:D:04B:UN:2.4c", "BGM+7+" + doc + "+9", "DTM+137:" + docTime + "?+00:303",
		"RFF+Z13:13025", "NAD+MS+9900000000003::293", "NAD+MR+9900000000010::293", "UNS+D", "NAD+DP",
		"LOC+172+" + malo, "LIN+1", "PIA+5+1-1?:1.29.0:SRW",
	}
	i := 0
	for t := cal.DayStart(d); t.Before(cal.DayEnd(d)); t = t.Add(15 * time.Minute) {
		segs = append(segs, "QTY+"+qualifier+":"+value(i)+":KWH", "DTM+163:"+stamp(t)+":303", "DTM+164:"+stamp(t.Add(15*time.Minute))+":303")
		i++
	}
	segs = append(segs, fmt.Sprintf("UNT+%d+%s", len(segs)+1, ref))
	return strings.Join(segs, "'\n") + "'\n"
}

func interchange(ref string, msgs ...string) string {
	return "UNA:+.? '\nUNB+UNOC:3+9900000000003:500+9900000000010:500+261101:1200+" + ref + "++TL'\n" +
		strings.Join(msgs, "") + fmt.Sprintf("UNZ+%d+%s'\n", len(msgs), ref)
}

// TestIngestMSCONS drives MSCONS interchanges through `meterstore ingest`
// into a real PostgreSQL and queries what landed: both clock-change days,
// a redelivery, a correction, a refused message beside a stored one.
func TestIngestMSCONS(t *testing.T) {
	cfgPath, dir := msconsDeployment(t)
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	query := func(sql string) string {
		t.Helper()
		out := mustRun(t, append([]string{"query", "--table", "power", "--format", "csv", "--now", "2026-11-01T00:00:00Z", sql}, c...)...)
		return strings.TrimSpace(out)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const malo, other = "51234567895", "51234567803"
	spring, autumn := metering.Date{Year: 2026, Month: 3, Day: 29}, metering.Date{Year: 2026, Month: 10, Day: 25}
	first := func(i int) string { return fmt.Sprintf("%d.%03d", i/10, i) }
	// Recognised by its content: the name says nothing.
	good := write("delivery.txt", interchange("IC1",
		msconsMessage("M1", "DOC1", "202603301000", malo, spring, "220", first),
		msconsMessage("M2", "DOC2", "202610261000", malo, autumn, "67", first)))
	out := mustRun(t, append([]string{"ingest", "--table", "power", good}, c...)...)
	for _, want := range []string{`message 1 "M1" (document DOC1): 92 readings: 92 inserted`, `message 2 "M2" (document DOC2): 100 readings: 100 inserted`} {
		if !strings.Contains(out, want) {
			t.Errorf("ingest: want %q in\n%s", want, out)
		}
	}
	if got := query(`SELECT balancing_day, count(*) AS n, min("from") AS first, max("to") AS last, min(quality) AS q, min(version_scope) AS scope, min(version) AS v
		FROM readings GROUP BY balancing_day ORDER BY 1`); got != "balancing_day,n,first,last,q,scope,v\n"+
		"2026-03-29,92,2026-03-28T23:00:00Z,2026-03-29T22:00:00Z,220,9900000000003:2026-03,20260330100000\n"+
		"2026-10-25,100,2026-10-24T22:00:00Z,2026-10-25T23:00:00Z,67,9900000000003:2026-10,20261026100000" {
		t.Errorf("what landed:\n%s", got)
	}

	// Redelivered: every reading present, nothing new.
	out = mustRun(t, append([]string{"ingest", "--table", "power", "--format", "mscons", good}, c...)...)
	if !strings.Contains(out, "92 readings: 0 inserted, 92 already present") || !strings.Contains(out, "100 readings: 0 inserted, 100 already present") {
		t.Errorf("redelivery:\n%s", out)
	}

	// A corrected interchange, a later document, supersedes the first.
	corr := write("corrected.edi", interchange("IC2", msconsMessage("M1", "DOC1-2", "202604021000", malo, spring, "220", func(int) string { return "1" })))
	out = mustRun(t, append([]string{"ingest", "--table", "power", corr}, c...)...)
	if !strings.Contains(out, "92 readings: 0 inserted") || !strings.Contains(out, "92 superseded, 0 shadowed") {
		t.Errorf("correction:\n%s", out)
	}
	if got := query(`SELECT count(*) AS n, sum(value) AS s, min(version) AS v FROM readings WHERE balancing_day = DATE '2026-03-29'`); got != "n,s,v\n92,92,20260402100000" {
		t.Errorf("after the correction:\n%s", got)
	}
	if got := query(`SELECT count(*) AS n FROM readings_versions WHERE balancing_day = DATE '2026-03-29'`); got != "n\n184" {
		t.Errorf("versions after the correction:\n%s", got)
	}

	// A bad message is refused whole, naming its segment; the other is stored.
	bad := msconsMessage("M2", "DOC4", "202604021000", other, spring, "220", first)
	bad = strings.Replace(bad, "QTY+220:0.003", "QTY+999:0.003", 1)
	mixed := write("mixed.edi", interchange("IC3", msconsMessage("M1", "DOC3", "202604021000", other, autumn, "220", first), bad))
	out, code := run(t, append([]string{"ingest", "--table", "power", mixed}, c...)...)
	if code != exitPermanent || !strings.Contains(out, `message 1 "M1" (document DOC3): 100 readings: 100 inserted`) ||
		!strings.Contains(out, `message 2 "M2" refused, nothing of it written: message 2 "M2": segment 21 (QTY): quantity qualifier "999"`) {
		t.Errorf("mixed: exit %d\n%s", code, out)
	}
	if got := query(`SELECT count(*) AS n FROM readings WHERE malo_id = '` + other + `'`); got != "n\n100" {
		t.Errorf("after the mixed interchange: %s", got)
	}

	// A broken interchange envelope writes nothing.
	env := write("envelope.edi", strings.Replace(interchange("IC4", msconsMessage("M1", "DOC5", "202604031000", other, spring, "220", first)), "UNZ+1", "UNZ+2", 1))
	out, code = run(t, append([]string{"ingest", "--table", "power", env}, c...)...)
	if code != exitPermanent || !strings.Contains(out, "interchange refused, nothing written") {
		t.Errorf("envelope: exit %d\n%s", code, out)
	}
	if got := query(`SELECT count(*) AS n FROM readings_versions`); got != "n\n384" {
		t.Errorf("in all: %s", got)
	}

	// Messages written together: the one the store refuses (another value
	// under a stored version) is refused alone, the others are written.
	conflict := write("conflict.edi", interchange("IC5",
		msconsMessage("M1", "DOC6", "202604051000", other, spring, "220", first),
		msconsMessage("M2", "DOC1-2", "202604021000", malo, spring, "220", func(int) string { return "2" }),
		msconsMessage("M3", "DOC7", "202604051000", other, autumn, "220", first)))
	out, code = run(t, append([]string{"ingest", "--table", "power", conflict}, c...)...)
	if code != exitPermanent || !strings.Contains(out, `message 1 "M1" (document DOC6): 92 readings: 92 inserted`) ||
		!strings.Contains(out, `message 2 "M2" refused, nothing of it written: segment 12 (QTY): `) ||
		!strings.Contains(out, `message 3 "M3" (document DOC7): 100 readings: 0 inserted, 0 already present, 0 late to the cold tier; 100 superseded`) {
		t.Errorf("conflict: exit %d\n%s", code, out)
	}
	if got := query(`SELECT count(*) AS n, sum(value) AS s FROM readings_versions WHERE malo_id = '` + malo + `' AND version = 20260402100000`); got != "n,s\n92,92" {
		t.Errorf("after the conflict, the stored version: %s", got)
	}
	if got := query(`SELECT count(*) AS n FROM readings_versions`); got != "n\n576" {
		t.Errorf("in all, after the conflict: %s", got)
	}

	// After archival, a message for an archived day goes to the cold tier
	// as late corrections, superseding what was stored, while the other
	// of its write stays hot; each report counts its own (W: May 20 minus
	// the 45 days' lag).
	mustRun(t, append([]string{"archive", "--now", "2026-05-20T00:00:00Z"}, c...)...)
	fresh, err := metering.MaLoFromPrefix("5123456781")
	if err != nil {
		t.Fatal(err)
	}
	late := write("late.edi", interchange("IC6",
		msconsMessage("M1", "DOC8", "202605211000", other, spring, "220", func(int) string { return "3" }),
		msconsMessage("M2", "DOC9", "202605211000", fresh.String(), autumn, "220", first)))
	out = mustRun(t, append([]string{"ingest", "--table", "power", late}, c...)...)
	for _, want := range []string{`message 1 "M1" (document DOC8): 92 readings: 0 inserted, 0 already present, 92 late to the cold tier; 92 superseded`,
		`message 2 "M2" (document DOC9): 100 readings: 100 inserted, 0 already present, 0 late to the cold tier`} {
		if !strings.Contains(out, want) {
			t.Errorf("late: want %q in\n%s", want, out)
		}
	}
	if got := query(`SELECT count(*) AS n, sum(value) AS s, min(version) AS v FROM readings WHERE malo_id = '` + other + `' AND balancing_day = DATE '2026-03-29'`); got != "n,s,v\n92,276,20260521100000" {
		t.Errorf("after the late correction: %s", got)
	}
	// Written twice, to count the late ones per message, stored once.
	if got := query(`SELECT count(*) AS n FROM readings_versions WHERE version = 20260521100000`); got != "n\n192" {
		t.Errorf("versions of the late interchange: %s", got)
	}
}

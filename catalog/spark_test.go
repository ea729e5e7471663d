package catalog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
)

// sparkJar returns the iceberg-spark-runtime jar the Spark test loads:
// MS_SPARK_ICEBERG_JAR, or where Maven puts it (.ci/spark.sh fetches it).
func sparkJar() string {
	if j := os.Getenv("MS_SPARK_ICEBERG_JAR"); j != "" {
		return j
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".m2/repository/org/apache/iceberg/iceberg-spark-runtime-4.1_2.13/1.12.0/iceberg-spark-runtime-4.1_2.13-1.12.0.jar")
}

// sparkSession is testdata/spark_hadoop.py running: one Spark session
// with a Hadoop catalog on a warehouse, taking commands.
type sparkSession struct {
	t      *testing.T
	in     io.WriteCloser
	lines  chan string
	stderr *bytes.Buffer
	ctx    context.Context
}

func startSpark(t *testing.T, ctx context.Context, warehouse string) *sparkSession {
	t.Helper()
	// The process outlives the test's context until the cleanup has
	// closed its input and waited for it; the timeout stays a bound.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 6*time.Minute)
	cmd := exec.CommandContext(pctx, "python3", "testdata/spark_hadoop.py", warehouse, sparkJar())
	cmd.Env = append(os.Environ(), "SPARK_LOCAL_IP=127.0.0.1")
	cmd.WaitDelay = time.Minute
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &sparkSession{t: t, in: in, lines: make(chan string), stderr: &stderr, ctx: ctx}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		defer cancel()
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Logf("spark exited: %v\n%s", err, tail(stderr.String()))
		}
	})
	s.answer(nil) // {"ready": true}
	return s
}

// answer reads the next JSON line into v; the context bounds the wait.
func (s *sparkSession) answer(v any) {
	s.t.Helper()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("spark ended before answering")
			}
			if !strings.HasPrefix(line, "{") {
				continue // not an answer: something Spark printed
			}
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Error != "" {
				s.t.Fatalf("spark: %s", e.Error)
			}
			if v == nil {
				return
			}
			if err := json.Unmarshal([]byte(line), v); err != nil {
				s.t.Fatalf("spark answered %q: %v", line, err)
			}
			return
		case <-s.ctx.Done():
			s.t.Fatalf("spark did not answer in time")
		}
	}
}

func (s *sparkSession) do(cmd string, v any) {
	s.t.Helper()
	if _, err := fmt.Fprintln(s.in, cmd); err != nil {
		s.t.Fatal(err)
	}
	s.answer(v)
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// TestInteropSparkHadoop has Spark 4.1 with Iceberg 1.12's Hadoop catalog
// append a row to a table of MeterStore's warehouse, as a user pointing
// type=hadoop at it would. The fork must be found and named, MeterStore's
// next commits must leave it visible to Spark and lose none of their rows,
// and after ResolveForks Spark reads MeterStore's table again. It needs
// pyspark 4.1 and the iceberg-spark-runtime jar (.ci/spark.sh); without
// them it fails in CI and is skipped elsewhere.
func TestInteropSparkHadoop(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyspark; assert pyspark.__version__.startswith('4.1')").Run(); err != nil {
		missing(t, "pyspark 4.1 is required: pip install pyspark==4.1.4", err)
	}
	if _, err := os.Stat(sparkJar()); err != nil {
		missing(t, "the iceberg-spark-runtime-4.1_2.13 1.12.0 jar is required: .ci/spark.sh", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a bound, not a measure
	defer cancel()

	wh := fileWarehouse(t)
	var logs syncBuffer
	c, err := catalog.New(catalog.Options{Warehouse: wh, Log: blobLog(t, wh.Bucket),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateNamespace(ctx, table.Identifier{"metering"}, iceberg.Properties{}); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"metering", "power"}
	tbl := createTable(t, c, "power", nil)
	if tbl, err = appendRows(t, tbl, "ms0", 4, nil); err != nil { // v2
		t.Fatal(err)
	}

	spark := startSpark(t, ctx, strings.TrimPrefix(wh.Root, "file://"))
	var ins struct {
		Snapshot int64 `json:"snapshot"`
		Rows     int64 `json:"rows"`
	}
	spark.do("insert", &ins)
	if ins.Rows != 5 {
		t.Fatalf("spark counts %d rows after its insert, want 5", ins.Rows)
	}
	const v3 = "metering/power/metadata/v3.metadata.json"
	foreign, err := wh.Bucket.Get(ctx, v3)
	if err != nil {
		t.Fatalf("spark did not commit v3: %v", err)
	}
	fork := wantFork(t, c.CheckMirror(ctx, ident), v3)
	if fork.SnapshotID != ins.Snapshot || fork.Records != 5 {
		t.Errorf("fork %+v, want spark's snapshot %d with 5 records", fork, ins.Snapshot)
	}

	// MeterStore's next commits: its v3, then v4.
	for _, w := range []string{"ms1", "ms2"} {
		if tbl, err = appendRows(t, tbl, w, 4, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := wh.Bucket.Get(ctx, v3); err != nil || !bytes.Equal(got, foreign) {
		t.Fatalf("spark's v3 was overwritten or removed (%v)", err)
	}
	if !strings.Contains(logs.String(), "file="+v3) {
		t.Errorf("no log line names %s:\n%s", v3, logs.String())
	}
	var read struct {
		Writers []string `json:"writers"`
	}
	spark.do("read", &read)
	if got := distinctWriters(read.Writers); !slices.Equal(got, []string{"ms0", "spark"}) {
		t.Fatalf("after MeterStore's commits spark reads writers %v, want its own row kept", got)
	}
	loaded, err := c.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if got := distinctWriters(writers(t, loaded)); !slices.Equal(got, []string{"ms0", "ms1", "ms2"}) {
		t.Fatalf("MeterStore's table holds writers %v", got)
	}

	moved, err := c.ResolveForks(ctx, ident)
	if err != nil || len(moved) != 1 || moved[0].File != v3 {
		t.Fatalf("ResolveForks: %v, %v", moved, err)
	}
	spark.do("read", &read)
	if got := distinctWriters(read.Writers); !slices.Equal(got, []string{"ms0", "ms1", "ms2"}) {
		t.Fatalf("after ResolveForks spark reads writers %v, want MeterStore's", got)
	}
}

// missing fails the test in CI, where .ci/run installs what it needs, and
// skips it elsewhere.
func missing(t *testing.T, msg string, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg, err)
	}
	t.Skip(msg)
}

package pgnum

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRoundTrip has the server print what it received.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	Register(conn.TypeMap())
	Register(conn.TypeMap()) // idempotent

	micros := []int64{0, 1, -1, 99, 100, 9999, 10000, 999_999, 1_000_000, -1_000_001, 123_456_789,
		999_999_999_999_999_999, -999_999_999_999_999_999, math.MaxInt64, math.MinInt64 + 1, math.MinInt64}
	uints := []uint64{0, 1, 9999, 10000, 10001, 20260301120000, 1 << 63, math.MaxUint64}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		micros = append(micros, rng.Int64N(2e18)-1e18, rng.Int64N(1e7)-5e6)
		uints = append(uints, rng.Uint64(), rng.Uint64N(1e15))
	}
	for _, v := range micros {
		var got string
		if err := conn.QueryRow(ctx, `SELECT $1::numeric::text`, Micro(v)).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := microString(v); got != want {
			t.Errorf("Micro(%d) arrived as %s, want %s", v, got, want)
		}
	}
	for _, v := range uints {
		var got string
		p := Uint(v)
		if err := conn.QueryRow(ctx, `SELECT $1::numeric::text`, &p).Scan(&got); err != nil { // by pointer, too
			t.Fatal(err)
		}
		if want := strconv.FormatUint(v, 10); got != want {
			t.Errorf("Uint(%d) arrived as %s", v, got)
		}
	}
	// Other values still go through pgx's own codec.
	var got string
	if err := conn.QueryRow(ctx, `SELECT $1::numeric::text`, 12.5).Scan(&got); err != nil || got != "12.5" {
		t.Errorf("float64 arrived as %s, %v", got, err)
	}
}

func microString(v int64) string {
	sign, a := "", uint64(v)
	if v < 0 {
		sign, a = "-", uint64(-v)
	}
	return fmt.Sprintf("%s%d.%06d", sign, a/1_000_000, a%1_000_000)
}

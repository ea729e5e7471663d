package blob_test

import (
	"testing"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/blob/blobtest"
)

// raceStores are the object stores whose conditional write is the
// server's: S3 (versitygw), GCS (fake-gcs-server) and Azure (Azurite).
var raceStores = map[string]func(t *testing.T) *blob.Bucket{
	"s3": openS3, "gcs": openGCS, "azure": openAzure,
}

// TestRace races PutIfAbsent longer than the conformance suite does, on
// the servers: 32 rounds of 16 writers of one new key each, of which
// exactly one must win.
func TestRace(t *testing.T) {
	for name, open := range raceStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := open(t)
			defer b.Close()
			st, err := blobtest.RacePutIfAbsent(t.Context(), b, "race/", 32, 16, 32)
			for _, v := range st.Violations {
				t.Error(v)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d rounds of %d writers: %d won, %d refused", name, st.Rounds, st.Writers, st.Won, st.Refused)
		})
	}
}

// TestRaceTeeth shows that the race tells a broken conditional write from
// a correct one on each of those stores: with the write made
// unconditional, or its check made apart from the write, the race the
// conformance suite runs must see rounds with more than one winner.
func TestRaceTeeth(t *testing.T) {
	for name, open := range raceStores {
		for _, flaw := range []blob.Flaw{blob.Unconditional, blob.CheckThenPut} {
			t.Run(name+"/"+flaw.String(), func(t *testing.T) {
				t.Parallel()
				b := open(t)
				defer b.Close()
				blob.Break(b, flaw)
				st, err := blobtest.RacePutIfAbsent(t.Context(), b, "race/", 8, 16, 32)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d rounds of %d writers: %d won, %d refused, %d rounds caught", flaw, st.Rounds, st.Writers, st.Won, st.Refused, len(st.Violations))
				if len(st.Violations) == 0 {
					t.Fatalf("a %s PutIfAbsent passed the race test: it has no teeth on %s", flaw, name)
				}
			})
		}
	}
}

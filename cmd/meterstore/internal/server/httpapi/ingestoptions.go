package httpapi

import (
	"fmt"
	"net/http"

	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// optionError is an ingest's option refused before the body is read: 400
// for one sent twice, 422 for a value the store would refuse.
type optionError struct {
	status int
	code   string
	msg    string
}

// ingestOptions returns the write options of an ingest request: the
// query parameter substitute_by, and the source, from the query parameter
// source or else the header X-MeterStore-Source. Each is sent at most once
// and, where sent, is what series.CheckAttribution accepts: not empty, at
// most series.MaxAttributionLen bytes of UTF-8 without control characters.
// They are checked whatever the table declares, so that a request is
// refused the same on every table, and before the body is read, so that
// nothing of it is written.
func ingestOptions(r *http.Request) (store.WriteOptions, *optionError) {
	q := r.URL.Query()
	one := func(what string, vs []string) (string, bool, *optionError) {
		switch {
		case len(vs) == 0:
			return "", false, nil
		case len(vs) > 1:
			return "", false, &optionError{http.StatusBadRequest, "bad_request", fmt.Sprintf("%s sent %d times: send it once", what, len(vs))}
		}
		if err := series.CheckAttribution(vs[0]); err != nil {
			return "", false, &optionError{http.StatusUnprocessableEntity, "refused",
				fmt.Sprintf("%s: %v; want 1 to %d bytes of UTF-8 without control characters", what, err, series.MaxAttributionLen)}
		}
		return vs[0], true, nil
	}
	var o store.WriteOptions
	by, sub, err := one("query parameter substitute_by", q["substitute_by"])
	if err != nil {
		return o, err
	}
	o.Substitute, o.By = sub, by
	// A table with provenance columns records the delivery as api, with
	// the caller's reference; an MSCONS interchange records its own.
	o.Source.Kind = series.SourceAPI
	header, _, err := one("header "+sourceHeader, r.Header.Values(sourceHeader))
	if err != nil {
		return o, err
	}
	param, ok, err := one("query parameter source", q["source"])
	if err != nil {
		return o, err
	}
	o.Source.Ref = header
	if ok {
		o.Source.Ref = param
	}
	return o, nil
}

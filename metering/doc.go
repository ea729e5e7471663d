// Package metering is the domain layer of MeterStore: the identifiers, codes
// and calendar of German energy-market metering time series.
//
// It validates market location ids (MaLo), metering location ids (MeLo), OBIS
// codes, commodities (Sparten), units, MSCONS quality codes and ISO 8601
// resolutions, and it knows the calendar the market settles on: Berlin local
// days of 23, 24 or 25 hours, and the gas day (Gastag) that runs from 06:00 to
// 06:00 local time.
//
// Parsers accept the canonical spelling of a value and nothing looser, because
// these values end up in merge keys: two spellings of one code would be two
// keys. A rejected input yields a *ParseError wrapping ErrSyntax, ErrRange,
// ErrCheckDigit or ErrUnknown.
//
// The package performs no I/O and holds no mutable state. Time zone data is
// embedded, so a Calendar works on machines without a zoneinfo database.
// Instants returned by a Calendar are in UTC; instants passed in may carry any
// location.
package metering

// Package series is the table model the tiers and the front door share: a
// declared Table (time model, extra columns, resolutions, partition width,
// integrity) and how its declaration may evolve (Evolve), a Reading with
// its Decimal value and attribution columns, the Range of "from" a read
// covers, the Checker that holds the one definition of a valid reading
// both tiers apply, a write's per-row Status, and the Error whose Kind
// says who is at fault. It imports no tier, so that every tier can speak
// it.
package series

package flightapi

// How Flight SQL names MeterStore's relations: catalog.db_schema.table.
// The catalog is "meterstore", the deployment; a db_schema is a MeterStore
// table, holding readings, readings_versions and completeness; the
// db_schema "system" holds the system tables. A statement passes through
// to the store as the client sent it: the store's query session has the
// same names (power.readings, meterstore.power.readings), so nothing is
// rewritten, and an unqualified readings, which would name no table, is
// refused by the store.

// Catalog is the one Flight SQL catalog: the deployment.
const Catalog = "meterstore"

// SystemSchema is the db_schema of the system tables.
const SystemSchema = "system"

// The relations of a MeterStore table.
var relations = []string{"readings", "readings_versions", "completeness"}

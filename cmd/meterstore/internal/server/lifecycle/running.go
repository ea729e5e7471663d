package lifecycle

// runningQueries is server.max_running_queries: configured, or, when
// zero, as many queries as the cores hold, each running threads DuckDB
// threads (0: one per core), and at least one. A query saturates its
// threads; past the cores, more queries running at once only slow each
// other down and take the cores the ingests need.
func runningQueries(configured, threads, cores int) int {
	if configured > 0 {
		return configured
	}
	if threads <= 0 {
		threads = cores
	}
	return max(1, cores/threads)
}

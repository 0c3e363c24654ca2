// Package insights is the engine-wide read side: the overview, contract and
// step statistics, problems grouped by cause and process maps, aggregated
// over every thread, so a party-scoped service account may not read them.
// One handler per query, each over the narrow port it reads.
package insights

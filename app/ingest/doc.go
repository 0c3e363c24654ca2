// Package ingest makes OpenTelemetry traces threads: IngestTrace records a trace's spans as steps through the thread use cases, EndQuietTraces ends a trace thread once its spans went quiet.
package ingest

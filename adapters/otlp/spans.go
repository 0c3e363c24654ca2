package otlp

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/ingest"
	"github.com/threadengine/engine/domain"
)

// collect turns the decoded request into the traces the IngestTrace use
// case takes (its spans grouped by trace, in the exporter's order), checking
// the ids pdata leaves to the receiver. A resource's attributes are read
// once and shared by its spans; the count of what a span sees once its
// resource's attributes apply to it still bounds the request (MaxObjects).
func collect(td ptrace.Traces, lim config.OTLPLimits) ([]ingest.Trace, error) {
	rss := td.ResourceSpans()
	copies := 0
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			copies += rs.ScopeSpans().At(j).Spans().Len() * rs.Resource().Attributes().Len()
			if copies > lim.MaxObjects {
				return nil, tooLarge(limits.OTLPObjects, "more than %d attributes once resource attributes are applied to each span", lim.MaxObjects)
			}
		}
	}
	byID := map[pcommon.TraceID]int{}
	var out []ingest.Trace
	total := 0
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := attrMap(rs.Resource().Attributes())
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				if total++; total > lim.MaxSpans {
					return nil, tooLarge(limits.OTLPSpans, "more than %d spans in one request", lim.MaxSpans)
				}
				if s.TraceID().IsEmpty() {
					return nil, malformed("span %q: traceId must be 16 non-zero bytes", s.Name())
				}
				if s.SpanID().IsEmpty() {
					return nil, malformed("span %q: spanId must be 8 non-zero bytes", s.Name())
				}
				sp := domain.Span{TraceID: s.TraceID().String(), SpanID: s.SpanID().String(), Name: s.Name(),
					Start: nanos(s.StartTimestamp()), End: nanos(s.EndTimestamp()), Resource: res, Attributes: attrMap(s.Attributes())}
				if p := s.ParentSpanID(); !p.IsEmpty() {
					sp.ParentID = p.String()
				}
				if s.Status().Code() == ptrace.StatusCodeError {
					sp.Failed, sp.StatusMessage = true, s.Status().Message()
				}
				for e := 0; e < s.Events().Len(); e++ {
					ev := s.Events().At(e)
					sp.Events = append(sp.Events, domain.SpanEvent{Name: ev.Name(), Time: nanos(ev.Timestamp()), Attributes: attrMap(ev.Attributes())})
				}
				n, ok := byID[s.TraceID()]
				if !ok {
					n = len(out)
					byID[s.TraceID()] = n
					out = append(out, ingest.Trace{ID: sp.TraceID})
				}
				out[n].Spans = append(out[n].Spans, sp)
			}
		}
	}
	return out, ingest.ValidateTraces(out)
}

func nanos(n pcommon.Timestamp) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return n.AsTime().UTC()
}

// attrMap flattens attributes to strings (an array or a map as JSON).
func attrMap(m pcommon.Map) map[string]string {
	out := make(map[string]string, m.Len())
	m.Range(func(k string, v pcommon.Value) bool {
		if k != "" {
			out[k] = valueString(v)
		}
		return true
	})
	return out
}

func valueString(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return v.Str()
	case pcommon.ValueTypeBool:
		return strconv.FormatBool(v.Bool())
	case pcommon.ValueTypeInt:
		return strconv.FormatInt(v.Int(), 10)
	case pcommon.ValueTypeDouble:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64)
	case pcommon.ValueTypeBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes().AsRaw())
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		parts := make([]string, 0, s.Len())
		for i := 0; i < s.Len(); i++ {
			parts = append(parts, valueString(s.At(i)))
		}
		b, _ := json.Marshal(parts)
		return string(b)
	case pcommon.ValueTypeMap:
		b, _ := json.Marshal(attrMap(v.Map()))
		return string(b)
	}
	return ""
}

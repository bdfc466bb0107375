package otlp

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// endpointParser returns the parser of an endpoint for the protocol:
// an http or https URL with a host, such as http://collector:4318; for
// grpc also a host and port alone, such as collector:4317, which is
// https unless insecure says otherwise, as the specification's
// OTEL_EXPORTER_OTLP_INSECURE does.
func endpointParser(grpc, insecure bool) func(string) (*url.URL, error) {
	return func(v string) (*url.URL, error) {
		trimmed := strings.TrimSpace(v)
		if grpc && !strings.Contains(trimmed, "://") {
			scheme := "https://"
			if insecure {
				scheme = "http://"
			}
			trimmed = scheme + trimmed
		}
		u, err := parseEndpoint(trimmed)
		if err != nil {
			return nil, err
		}
		return u, nil
	}
}

// checkers check the variables resolveSignal reads twice, general and
// own, by the suffix of their names.
func checkers() map[string]func(string) error {
	return map[string]func(string) error{
		"HEADERS":     func(v string) error { _, err := parseHeaders(v); return err },
		"TIMEOUT":     func(v string) error { _, err := parseMillis(v); return err },
		"COMPRESSION": func(v string) error { _, err := parseCompression(v); return err },
		"PROTOCOL":    checkProtocol,
		"INSECURE":    func(v string) error { _, err := parseBool(v); return err },
	}
}

// parseBool parses a boolean variable: true or false, in any case.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither true nor false", v)
}

// parseMillis parses a duration in milliseconds, such as 10000, which
// must be more than 0.
func parseMillis(v string) (time.Duration, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number of milliseconds", v)
	}
	if n <= 0 || n > int64(time.Duration(1<<62)/time.Millisecond) {
		return 0, fmt.Errorf("%d milliseconds is out of range: more than 0 is required", n)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// parseRatio parses a traceidratio sampler's ratio, from 0 to 1.
func parseRatio(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f > 1 {
		return 0, fmt.Errorf("%q is not a ratio from 0 to 1", v)
	}
	return f, nil
}

// parseEndpoint parses an endpoint: an http or https URL with a host,
// such as http://collector:4318.
func parseEndpoint(v string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %w", v, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q is not an http or https URL", v)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host", v)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q has a user: send credentials in the headers", u.Redacted())
	}
	return u, nil
}

// parseHeaders parses a header list: key=value pairs, comma-separated,
// each value percent-encoded, such as "api-key=secret,team=a%20b".
func parseHeaders(v string) (map[string]string, error) {
	pairs, err := parsePairs(v)
	if err != nil {
		return nil, err
	}
	headers := make(map[string]string, len(pairs))
	for _, p := range pairs {
		headers[p[0]] = p[1]
	}
	return headers, nil
}

// parseResourceAttributes parses OTEL_RESOURCE_ATTRIBUTES: key=value
// pairs as a header list's, each a string attribute.
func parseResourceAttributes(v string) ([]attribute.KeyValue, error) {
	pairs, err := parsePairs(v)
	if err != nil {
		return nil, err
	}
	attrs := make([]attribute.KeyValue, 0, len(pairs))
	for _, p := range pairs {
		attrs = append(attrs, attribute.String(p[0], p[1]))
	}
	return attrs, nil
}

// parsePairs parses comma-separated key=value pairs, with percent-encoded
// values; every bad pair is reported.
func parsePairs(v string) ([][2]string, error) {
	var (
		pairs [][2]string
		errs  []error
	)
	for i, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		key, value, ok := strings.Cut(item, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			errs = append(errs, fmt.Errorf("pair %d, %q, is not key=value", i+1, item))
			continue
		}
		decoded, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil {
			errs = append(errs, fmt.Errorf("pair %d, the value of %q, is not percent-encoded: %w", i+1, key, err))
			continue
		}
		pairs = append(pairs, [2]string{key, decoded})
	}
	return pairs, errors.Join(errs...)
}

// parseCompression parses a compression, gzip or none, into whether it
// is gzip.
func parseCompression(v string) (bool, error) {
	switch strings.TrimSpace(v) {
	case "gzip":
		return true, nil
	case "none":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither gzip nor none", v)
}

// checkProtocol accepts the specification's protocols: grpc,
// http/protobuf and http/json.
func checkProtocol(v string) error {
	switch v {
	case protocolGRPC, protocolHTTPProtobuf, protocolHTTPJSON:
		return nil
	}
	return fmt.Errorf("%q is not supported: only grpc, http/protobuf or http/json is", v)
}

// checkExporter accepts otlp and none.
func checkExporter(v string) error {
	if v != "otlp" && v != "none" {
		return fmt.Errorf("%q is not supported: only otlp or none is", v)
	}
	return nil
}

// samplers are the supported values of OTEL_TRACES_SAMPLER.
func samplers() []string {
	return []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}
}

// checkSampler accepts the supported samplers.
func checkSampler(v string) error {
	if !slices.Contains(samplers(), v) {
		return fmt.Errorf("%q is not supported: only %s", v, strings.Join(samplers(), ", "))
	}
	return nil
}

package otlp

import (
	"errors"
	"fmt"
	"maps"
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
		"TIMEOUT":     func(v string) error { _, err := parseTimeout(v); return err },
		"COMPRESSION": func(v string) error { _, err := parseCompression(v); return err },
		"PROTOCOL":    func(v string) error { _, err := enum(checkProtocol)(v); return err },
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

// parseTimeout parses a timeout in milliseconds, such as 10000: 0, which
// the specification reads as no limit, or more.
func parseTimeout(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n == 0 {
		return 0, nil
	}
	d, err := parseMillis(v)
	if err != nil {
		return 0, fmt.Errorf("%w, or 0 for no limit", err)
	}
	return d, nil
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
// and a port from 1 to 65535 if any, such as http://collector:4318.
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
	if p := u.Port(); p != "" {
		// url.Parse checks a port is digits, not that a TCP port can be
		// it: every export's dial would fail instead.
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q has a port out of range: from 1 to 65535", v)
		}
	}
	return u, nil
}

// parseHeaders parses a header list: key=value pairs, comma-separated,
// each value percent-encoded, such as "api-key=secret,team=a%20b". Every
// name must be an HTTP header name and every decoded value an HTTP header
// value: net/http would refuse any other on every export, long after Read.
func parseHeaders(v string) (map[string]string, error) {
	pairs, err := parsePairs(v)
	var errs []error
	headers := make(map[string]string, len(pairs))
	for _, p := range pairs {
		switch {
		case !isToken(p.key):
			errs = append(errs, fmt.Errorf("pair %d, the name %q, is not a header name: only letters, digits and !#$%%&'*+-.^_`|~", p.n, p.key))
		case strings.ContainsFunc(p.value, isControl):
			errs = append(errs, fmt.Errorf("pair %d, the value of %q, holds a control character, which no header value may", p.n, p.key))
		default:
			headers[p.key] = p.value
		}
	}
	if err := errors.Join(err, errors.Join(errs...)); err != nil {
		return nil, err
	}
	return headers, nil
}

// isToken reports whether name is an HTTP token (RFC 9110, section 5.6.2),
// as a header's name must be.
func isToken(name string) bool {
	return name != "" && !strings.ContainsFunc(name, func(r rune) bool { return !isTokenChar(r) })
}

// isTokenChar reports whether r may be in an HTTP token.
func isTokenChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// isGRPCKeyChar reports whether r may be in a gRPC metadata key, which
// gRPC sends in lower case.
func isGRPCKeyChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// isControl reports whether r may not be in an HTTP header's value: a
// control character other than a tab.
func isControl(r rune) bool {
	return r < ' ' && r != '\t' || r == 0x7f
}

// checkGRPCHeaders returns an error for every header gRPC metadata can't
// carry, which grpc-go would refuse on every call: a name, lowercased as
// gRPC sends it, of other than 0-9, a-z, -, _ and ., and a value that is
// not printable ASCII, unless the name ends in -bin (a binary value).
func checkGRPCHeaders(headers map[string]string) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		key := strings.ToLower(name)
		if strings.ContainsFunc(key, func(r rune) bool { return !isGRPCKeyChar(r) }) {
			errs = append(errs, fmt.Errorf("the name %q is not gRPC metadata's: only 0-9, a-z (in any case), '-', '_' and '.'", name))
			continue
		}
		if !strings.HasSuffix(key, "-bin") && strings.ContainsFunc(headers[name], func(r rune) bool { return r < ' ' || r > '~' }) {
			errs = append(errs, fmt.Errorf("the value of %q is not printable ASCII, which gRPC metadata requires but of a name ending in -bin", name))
		}
	}
	return errors.Join(errs...)
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
		attrs = append(attrs, attribute.String(p.key, p.value))
	}
	return attrs, nil
}

// pair is one key=value pair of a list, its value decoded, and its place
// in the list, from 1.
type pair struct {
	key, value string
	n          int
}

// parsePairs parses comma-separated key=value pairs, with percent-encoded
// values; every bad pair is reported, and the good ones returned.
func parsePairs(v string) ([]pair, error) {
	var (
		pairs []pair
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
		pairs = append(pairs, pair{key: key, value: decoded, n: i + 1})
	}
	return pairs, errors.Join(errs...)
}

// parseCompression parses a compression, gzip or none in any case, into
// whether it is gzip.
func parseCompression(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "gzip":
		return true, nil
	case "none":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither gzip nor none", v)
}

// enum returns the parser of an enum variable's value, which check
// accepts: the value trimmed and in lower case, as the specification
// says enum values are read in any case. An error names the value as it
// was given.
func enum(check func(string) error) func(string) (string, error) {
	return func(v string) (string, error) {
		lower := strings.ToLower(strings.TrimSpace(v))
		if err := check(lower); err != nil {
			return "", fmt.Errorf("%q %w", v, err)
		}
		return lower, nil
	}
}

// checkProtocol accepts the specification's protocols, in lower case:
// grpc, http/protobuf and http/json.
func checkProtocol(v string) error {
	switch v {
	case protocolGRPC, protocolHTTPProtobuf, protocolHTTPJSON:
		return nil
	}
	return errors.New("is not supported: only grpc, http/protobuf or http/json is")
}

// checkExporter accepts otlp and none, in lower case.
func checkExporter(v string) error {
	if v != "otlp" && v != "none" {
		return errors.New("is not supported: only otlp or none is")
	}
	return nil
}

// samplers are the supported values of OTEL_TRACES_SAMPLER.
func samplers() []string {
	return []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}
}

// checkSampler accepts the supported samplers, in lower case.
func checkSampler(v string) error {
	if !slices.Contains(samplers(), v) {
		return fmt.Errorf("is not supported: only %s", strings.Join(samplers(), ", "))
	}
	return nil
}

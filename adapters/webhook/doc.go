// Package webhook is the HTTPS server of an App's admission and conversion
// webhooks (issue #21): it reads each review the API server POSTs to a
// Route's path, hands it to domain/webhook with the Route's Admitter or
// Converter, and writes the response back, with a span, metrics and log
// records for each review. It listens through the Setup's Host, with the
// certificate tlsfiles reads and reloads.
//
// It speaks HTTP/1.1 only: the API server's webhook client falls back to
// it, and a webhook gains nothing from HTTP/2's multiplexing that is worth
// its exposure to floods of streams.
//
// # Telemetry
//
// Spans, records and instruments are in the scope
// github.com/loam-dev/loam/kube, as the controllers'. Each review on a
// Route is one server span, in the trace of the API server's traceparent
// when the Propagator finds one, named by the Route's Type and the
// reviewed kind: "validate Memcached", "mutate Pod", "convert Memcached";
// a request refused before its body is read as a review (a wrong method,
// Content-Type or timeout, an oversize body) has the verb alone, such as
// "validate". Its attributes are those of the keys below; a review that
// fails or panics has the status Error. A Route is served at its Path
// under any prefix too (Route.Path says why); a path that is no Route's,
// with or without a prefix, is answered with 404 and reported nowhere.
//
// The baggage the Propagator finds goes on into the review's context, but
// for the members of the App's failure-injection Decoder (Config.Faults):
// a scenario in a review's header is stripped, with the event
// loam.fit.strip on its span, so an Admitter or a Converter, and the
// Client requests they make, never run under one.
//
// A denial is a WARN record "admission denied" with the message as
// exception.message, as loam's records of a failure carry theirs; a review
// that fails is a WARN record "review failed", the same way; a panic is an
// ERROR record "webhook panicked" with exception.type, exception.message
// (the panic's value) and exception.stacktrace. Each carries the span's
// attributes. A panic outside the Admitter and the Converter (a bug of the
// Server's, of its telemetry's, of a library's) is answered 200 all the
// same, with the review's uid, and recorded as "webhook panicked" too.
//
// Two instruments serve a dashboard: loam.kube.webhook.review.duration, a
// histogram in seconds of every request to a Route, by
// loam.kube.webhook.name, loam.kube.webhook.type and
// loam.kube.webhook.review.outcome, whose count is the rate of reviews and
// denials and whose buckets show how close they come to the API server's
// timeout; and loam.kube.webhook.reviews.active, an up-down counter of the
// reviews in flight by loam.kube.webhook.name and loam.kube.webhook.type,
// which shows a webhook stuck in its handler before the API server's
// timeouts do.
package webhook

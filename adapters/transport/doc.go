// Package transport builds the http.RoundTripper every client-go client of
// a kube.Client sends its requests through. It is composed of layers, as
// net/http's RoundTrippers compose, outermost first:
//
//  0. with Options.RequestCounts only, counting every request, a watch's
//     included, in rest_client_requests_total{code,method,host}, as
//     controller-runtime exports client-go's: code is the response's
//     status, or "<error>" for a request that got none, method the HTTP
//     method, and host the API server's host:port;
//  1. tracing and measuring with otelhttp, on the providers handed to New,
//     except for a watch, which lasts as long as an informer runs and gets
//     no span;
//  2. failure injection, only in an App that has it and only for a request
//     whose context carries a scenario: the request's injection point is
//     evaluated and an abort or a delay carried out before any token is
//     fetched; the scenario is stripped from the baggage header, since the
//     API server takes no part; and a reconcile's apply of one of its
//     children carries the scenario on in the child's annotation;
//  3. the bearer token, cached for a minute: one call of Token at a time,
//     on a goroutine of its own, which every request needing a token
//     waits for until its own context ends;
//  4. the base transport: dialled through the Host, TLS from a clone of the
//     Connection's config, no proxy whatever the environment says, HTTP/2
//     with a ping after 30 seconds of silence, and no gzip unless
//     Options.Gzip asks for it.
//
// The transport keeps every connection it dials, so that CloseConnections
// can close them all at shutdown, busy or idle.
package transport

// Package webhookreach tells the API server's failure to reach an App's
// own conversion webhook from every other error a list can fail with.
//
// While an App's pod starts, the API server may not reach its webhooks
// yet: the Service's endpoints follow the pod a moment late, and a pod
// whose Service doesn't publish not-ready addresses is no endpoint at all
// until it is ready. A list of a resource stored in another version then
// fails with the conversion webhook's error, which a Controller retries
// for a while; any other error is the Controller's to report at once.
package webhookreach

import (
	"regexp"
	"strings"
)

// conversionFailed is how the API server's conversion words a webhook it
// could not call: "conversion webhook for <group/version, Kind=kind>
// failed: Post \"<url>\": <why>".
const conversionFailed = "conversion webhook for "

// gatewayAnswers are how the API server's webhook client words an answer
// of 504 Gateway Timeout or 503 Service Unavailable, from the webhook or
// from a proxy in front of it that could not reach it (client-go's
// errors.NewGenericServerResponse): they name no URL, only the conversion
// webhook's CRD, "conversion webhook for cache.example.com/v1beta1,
// Kind=Memcached failed: the server was unable to return a response in
// the time allotted, but may still be processing the request".
var gatewayAnswers = []string{
	"the server was unable to return a response in the time allotted",
	"the server is currently unable to handle the request",
}

// NamesConversion reports whether err is the API server's failure to call
// a conversion webhook whose URL's path is one of paths, or ends with
// one, as a Service's path prefixed to it does. It reads the error's
// text, as the API server sends it, for the webhook's URL, whatever
// words surround it; an error that names no such URL, such as one of a
// webhook that answered with a malformed response, or of another
// webhook, is not one. A nil err is not one either.
//
// A webhook, or a proxy in front of it, that answered 504 or 503 is
// named by no URL (gatewayAnswers): such an error is one when it names
// the resource whose list failed, as "<group>/<version>,
// Resource=<plural>" (adapters/informer's list error does), and the
// conversion webhook of that group, and a path of paths ends with that
// resource's conversion path, /convert/<group>/<plural>: a list converts
// its own resource's objects alone, so the webhook that failed is that
// resource's.
func NamesConversion(err error, paths []string) bool {
	if err == nil || len(paths) == 0 {
		return false
	}
	text := err.Error()
	if !strings.Contains(text, conversionFailed) {
		return false
	}
	for _, path := range urlPaths(text) {
		for _, p := range paths {
			if p != "" && strings.HasSuffix(path, p) {
				return true
			}
		}
	}
	return namesListedConversion(text, paths)
}

// namesListedConversion reports whether text is a gateway's answer
// (gatewayAnswers) of the conversion webhook of the resource whose list
// failed, which text names, and paths end with that resource's conversion
// path.
func namesListedConversion(text string, paths []string) bool {
	if !containsAny(text, gatewayAnswers) {
		return false
	}
	for _, p := range paths {
		segments := strings.Split(p, "/")
		if len(segments) < 3 || segments[len(segments)-3] != "convert" {
			continue
		}
		group, plural := segments[len(segments)-2], segments[len(segments)-1]
		listed := regexp.MustCompile(`(^|[\s:])` + regexp.QuoteMeta(group) + `/[^/,\s]+, Resource=` + regexp.QuoteMeta(plural) + `([\s:]|$)`)
		if strings.Contains(text, conversionFailed+group+"/") && listed.MatchString(text) {
			return true
		}
	}
	return false
}

// containsAny reports whether text contains one of subs.
func containsAny(text string, subs []string) bool {
	for _, s := range subs {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// urlPaths returns the path of every https URL in text: each URL runs
// from "https://" to the first quote, space or end, less the punctuation
// of the sentence around it, and its path from the first slash after the
// host to its query or fragment. (net/url is no domain import: the
// domain does no I/O, and a path is all it reads.)
func urlPaths(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "https://")
		if i < 0 {
			return out
		}
		text = text[i+len("https://"):]
		end := strings.IndexAny(text, "\"'` \t\n\\")
		if end < 0 {
			end = len(text)
		}
		u := strings.TrimRight(text[:end], ":;,.)")
		text = text[end:]
		slash := strings.IndexByte(u, '/')
		if slash < 0 {
			continue
		}
		path := u[slash:]
		if q := strings.IndexAny(path, "?#"); q >= 0 {
			path = path[:q]
		}
		out = append(out, path)
	}
}

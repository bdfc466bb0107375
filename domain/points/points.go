// Package points names the failure-injection point of a request to the
// Kubernetes API server, after what the request does to which resource, as
// the API server's authorizer and audit log name it:
//
//	kube:<resource>[.<group>][/<subresource>]:<verb>
//
// such as kube:deployments.apps:patch, kube:secrets:get or
// kube:memcacheds.cache.example.com/status:patch. A request for a path that
// isn't a resource, such as discovery's, is named by its path instead:
// kube:/apis:get, kube:/version:get.
//
// The request is read as the API server's request-info resolver reads it
// (k8s.io/apiserver/pkg/endpoints/request), from its method, its path and
// its query alone:
//
//   - a GET (or HEAD) of a collection is a list, or a watch when its watch
//     parameter is anything but "0" or "false"; of an object, a get;
//   - a POST is a create, a PUT an update, a PATCH a patch (so a
//     server-side apply is a patch too);
//   - a DELETE of an object is a delete; of a collection, a
//     deletecollection;
//   - the deprecated /watch/ paths are a watch, and the deprecated /proxy/
//     paths a proxy. A request to an object's proxy subresource, such as
//     pods/proxy, is named by its method, as the resolver names it:
//     kube:pods/proxy:get;
//   - /api/v1/namespaces/foo is the namespaces resource, and
//     /api/v1/namespaces/foo/status and …/finalize are its subresources;
//     /api/v1/namespaces/foo/pods is the pods resource in namespace foo.
//
// A path that isn't a resource takes its method in lower case as its verb:
// get, head, post, put, patch, delete, options, connect or trace. A method
// the resolver gives no verb to, such as OPTIONS of a resource, keeps its own
// name in lower case too. Any other method, which client-go never sends, is
// the verb unknown, so every point ends in one of a known set of verbs.
package points

import "strings"

// The verbs of the API server's resources.
const (
	Get              = "get"
	List             = "list"
	Watch            = "watch"
	Create           = "create"
	Update           = "update"
	Patch            = "patch"
	Delete           = "delete"
	DeleteCollection = "deletecollection"
	Proxy            = "proxy"
)

// Unknown is the verb of a request whose method HTTP doesn't define, such
// as one an end user's own http.Client makes up.
const Unknown = "unknown"

// Request is what a request to the API server does, and to which resource,
// as the API server's request-info resolver reads it.
type Request struct {
	// Verb is the API server's verb for a resource: get, list, watch,
	// create, update, patch, delete, deletecollection or proxy. For a path
	// that isn't a resource, or a method the resolver has no verb for, it
	// is the method in lower case, or Unknown.
	Verb string
	// Resource is the resource's plural name, such as deployments. It is
	// empty for a request that isn't about a resource.
	Resource string
	// Group is the resource's API group, empty for the core group.
	Group string
	// Subresource is the subresource's name, such as status or scale, and
	// empty for a request to the resource itself.
	Subresource string
	// Namespace is the namespace the path names, empty for a
	// cluster-scoped resource or a request across every namespace.
	Namespace string
	// Name is the object's name as the path names it; empty for a
	// collection. (The resolver also takes a list's name from a
	// metadata.name field selector; Parse doesn't, since no point names
	// an object.)
	Name string
	// Path is the request's path when it isn't about a resource, and empty
	// when it is.
	Path string
}

// IsResource reports whether r is about a resource, rather than a path
// such as /apis or /version.
func (r Request) IsResource() bool { return r.Resource != "" }

// IsObject reports whether r is about one object of a resource itself,
// not about a collection, a subresource, or a path that isn't a resource.
func (r Request) IsObject() bool {
	return r.Resource != "" && r.Name != "" && r.Subresource == ""
}

// Point returns r's injection point: kube:<resource>[.<group>][/<subresource>]:<verb>,
// or kube:<path>:<verb> for a path that isn't a resource.
func (r Request) Point() string {
	if !r.IsResource() {
		path := r.Path
		if path == "" {
			path = "/"
		}
		return "kube:" + path + ":" + r.Verb
	}
	n := len("kube:") + len(r.Resource) + 1 + len(r.Group) + 1 + len(r.Subresource) + 1 + len(r.Verb)
	var b strings.Builder
	b.Grow(n)
	b.WriteString("kube:")
	b.WriteString(r.Resource)
	if r.Group != "" {
		b.WriteByte('.')
		b.WriteString(r.Group)
	}
	if r.Subresource != "" {
		b.WriteByte('/')
		b.WriteString(r.Subresource)
	}
	b.WriteByte(':')
	b.WriteString(r.Verb)
	return b.String()
}

// Point returns the injection point of a request with method, to path
// (its decoded path, as url.URL's Path holds it), with query, its decoded
// query parameters (url.Values converts).
func Point(method, path string, query map[string][]string) string {
	return Parse(method, path, query).Point()
}

// Parse reads what a request with method, to path, with query, does, as
// the API server's request-info resolver reads it. path is the request's
// decoded path, as url.URL's Path holds it; query its decoded parameters,
// such as url.Values. Parse never fails: a request it can't read as a
// resource's is one to a path that isn't a resource.
func Parse(method, path string, query map[string][]string) Request {
	nonResource := Request{Verb: pathVerb(method), Path: path}
	if nonResource.Path == "" {
		nonResource.Path = "/"
	}

	parts := splitPath(path)
	// /api/<version>/<resource>… or /apis/<group>/<version>/<resource>…:
	// anything shorter is discovery, /version, /healthz and the like.
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group = parts[1]
		parts = parts[3:]
	default:
		return nonResource
	}

	r := Request{Group: group}
	viaPath := false
	switch parts[0] {
	case Watch, Proxy:
		if len(parts) < 2 {
			// The resolver fails such a request; the server answers it as
			// an error. It names no resource, so it is named by its path.
			return nonResource
		}
		r.Verb = parts[0]
		parts = parts[1:]
		viaPath = true
	default:
		r.Verb = resourceVerb(method)
	}

	if parts[0] == "namespaces" && len(parts) > 1 {
		r.Namespace = parts[1]
		// namespaces/<name>/status and …/finalize are the namespace's own
		// subresources; namespaces/<name>/<resource>… is a resource in it.
		if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}

	// parts is now <resource>[/<name>[/<subresource>[/…]]]. A proxy path's
	// parts after the name are the proxied path, not a subresource.
	if len(parts) >= 3 && r.Verb != Proxy {
		r.Subresource = parts[2]
	}
	if len(parts) >= 2 {
		r.Name = parts[1]
	}
	r.Resource = parts[0]
	if r.Resource == "" {
		// An empty segment, as in /api/v1//pods, names no resource.
		return nonResource
	}

	if r.Name == "" && !viaPath {
		switch r.Verb {
		case Get:
			r.Verb = List
			if watching(query) {
				r.Verb = Watch
			}
		case Delete:
			r.Verb = DeleteCollection
		}
	}
	return r
}

// watching reports whether query asks for a watch, as the API server reads
// a boolean parameter: its first value is anything but "0" or "false" in
// any case, the empty string included.
func watching(query map[string][]string) bool {
	values := query["watch"]
	if len(values) == 0 {
		return false
	}
	v := values[0]
	return v != "0" && !strings.EqualFold(v, "false")
}

// resourceVerb returns the verb of method for a resource, before a GET or
// DELETE of a collection is told apart from one of an object.
func resourceVerb(method string) string {
	switch method {
	case "POST":
		return Create
	case "GET", "HEAD":
		return Get
	case "PUT":
		return Update
	case "PATCH":
		return Patch
	case "DELETE":
		return Delete
	}
	// The resolver gives no verb to any other method.
	return pathVerb(method)
}

// pathVerb returns the verb of method for a path that isn't a resource:
// the method in lower case when HTTP defines it, Unknown otherwise.
// Methods are case-sensitive, as net/http and the API server read them.
func pathVerb(method string) string {
	switch method {
	case "GET":
		return "get"
	case "HEAD":
		return "head"
	case "POST":
		return "post"
	case "PUT":
		return "put"
	case "PATCH":
		return "patch"
	case "DELETE":
		return "delete"
	case "OPTIONS":
		return "options"
	case "CONNECT":
		return "connect"
	case "TRACE":
		return "trace"
	}
	return Unknown
}

// splitPath returns path's segments, without the slashes at either end, as
// the resolver splits it.
func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

package celcheck

import (
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// object returns an object type named name with fields.
func object(name string, fields ...*apiservercel.DeclField) *apiservercel.DeclType {
	m := make(map[string]*apiservercel.DeclField, len(fields))
	for _, f := range fields {
		m[f.Name] = f
	}
	return apiservercel.NewObjectType(name, m)
}

func field(name string, t *apiservercel.DeclType, required bool) *apiservercel.DeclField {
	return apiservercel.NewDeclField(name, t, required, nil, nil)
}

func listOf(t *apiservercel.DeclType) *apiservercel.DeclType {
	return apiservercel.NewListType(t, -1)
}

// requestType is the type of request: the AdmissionRequest the webhook
// would receive, without its uid, and without object and oldObject, which
// are variables of their own. It is the API server's BuildRequestType
// field for field; the differential test compares the two.
func requestType() *apiservercel.DeclType {
	str := apiservercel.StringType
	gvk := object("kubernetes.GroupVersionKind",
		field("group", str, true), field("version", str, true), field("kind", str, true))
	gvr := object("kubernetes.GroupVersionResource",
		field("group", str, true), field("version", str, true), field("resource", str, true))
	userInfo := object("kubernetes.UserInfo",
		field("username", str, false),
		field("uid", str, false),
		field("groups", listOf(str), false),
		field("extra", apiservercel.NewMapType(str, listOf(str), -1), false),
	)
	return object("kubernetes.AdmissionRequest",
		field("kind", gvk, true),
		field("resource", gvr, true),
		field("subResource", str, false),
		field("requestKind", gvk, true),
		field("requestResource", gvr, true),
		field("requestSubResource", str, false),
		field("name", str, true),
		field("namespace", str, false),
		field("operation", str, true),
		field("userInfo", userInfo, true),
		field("dryRun", apiservercel.BoolType, false),
		field("options", apiservercel.DynType, false),
	)
}

// namespaceType is the type of namespaceObject: the Namespace of the
// object under admission, without its managed fields and owner
// references. It is the API server's BuildNamespaceType field for field.
func namespaceType() *apiservercel.DeclType {
	str, ts := apiservercel.StringType, apiservercel.TimestampType
	spec := object("kubernetes.NamespaceSpec", field("finalizers", listOf(str), true))
	condition := object("kubernetes.NamespaceCondition",
		field("status", str, true),
		field("type", str, true),
		field("lastTransitionTime", ts, true),
		field("message", str, true),
		field("reason", str, true),
	)
	status := object("kubernetes.NamespaceStatus",
		field("conditions", listOf(condition), true),
		field("phase", str, true),
	)
	metadata := object("kubernetes.NamespaceMetadata",
		field("name", str, true),
		field("generateName", str, true),
		field("namespace", str, true),
		field("labels", apiservercel.NewMapType(str, str, -1), true),
		field("annotations", apiservercel.NewMapType(str, str, -1), true),
		field("UID", str, true),
		field("creationTimestamp", ts, true),
		field("deletionGracePeriodSeconds", apiservercel.IntType, true),
		field("deletionTimestamp", ts, true),
		field("generation", apiservercel.IntType, true),
		field("resourceVersion", str, true),
		field("finalizers", listOf(str), true),
	)
	return object("kubernetes.Namespace",
		field("metadata", metadata, true),
		field("spec", spec, true),
		field("status", status, true),
	)
}

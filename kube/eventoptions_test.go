package kube

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/ports"
)

// deployment is a related object every field of which is set.
var deployment = ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "cache", UID: "d1"}

func TestRecordEvent_options(t *testing.T) {
	obj := ports.Object{UID: "u1", JSON: []byte(`{"metadata":{"namespace":"ns","name":"m"}}`)}
	rel := ports.EventObject(deployment)
	for _, tc := range []struct {
		name string
		opts []EventOption
		want ports.EventRecord // recorded when err is empty
		err  []string          // every line of the error
	}{
		{
			name: "a related object and an action",
			opts: []EventOption{Related(deployment), Action("Scale")},
			want: ports.EventRecord{Type: "Normal", Reason: "Scaled", Action: "Scale", Note: "n", Related: &rel},
		},
		{
			name: "a cluster-scoped related object",
			opts: []EventOption{Related(ObjectRef{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "n"})},
			want: ports.EventRecord{Type: "Normal", Reason: "Scaled", Action: "Reconcile", Note: "n", Related: &ports.EventObject{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "n"}},
		},
		{
			name: "the last action wins",
			opts: []EventOption{Action("Scale"), Action("Roll")},
			want: ports.EventRecord{Type: "Normal", Reason: "Scaled", Action: "Roll", Note: "n"},
		},
		{
			name: "every mistake at once",
			opts: []EventOption{
				Related(ObjectRef{APIVersion: "a/b/c", Namespace: "Not_A_Label"}), Action("scale"), {},
				Action("S" + strings.Repeat("x", 128)), Action("Scale Up"),
			},
			err: []string{
				`kube: RecordEvent: the related object (option 0) a/b/c/ Not_A_Label/: has the APIVersion "a/b/c": unexpected GroupVersion string: a/b/c`,
				"has no Kind, such as Deployment",
				"has no Name",
				"has no UID",
				`has the Namespace "Not_A_Label": ` + CheckNamespace("Not_A_Label").Error(),
				`kube: RecordEvent: the action (option 1) "scale" does not start with an upper-case ASCII letter: want CamelCase, such as Scale`,
				"kube: RecordEvent: the option 2 is the zero EventOption: make one with kube.Related or kube.Action",
				`kube: RecordEvent: the action (option 3) "Sxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"… is 129 characters long: an Event's action has at most 128`,
				`kube: RecordEvent: the action (option 4) "Scale Up" has ' ' at byte 5: want only ASCII letters and digits, CamelCase`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorded{}
			err := RecordEvent(withEvents(t.Context(), r, obj, actionReconcile), Normal, "Scaled", "n", tc.opts...)
			if tc.err != nil {
				require.EqualError(t, err, strings.Join(tc.err, "\n"))
				require.Empty(t, r.records, "nothing is recorded")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []ports.EventRecord{tc.want}, r.records)
		})
	}
}

// EventRecorder.Record checks as RecordEvent does, and the regarding
// object and the action besides, before it needs a writer: the zero
// EventRecorder reports its own mistake with the rest.
func TestEventRecorder_Record_checks(t *testing.T) {
	var r *EventRecorder
	err := r.Record(context.Background(), ObjectRef{Kind: "ConfigMap"}, "Bad", "reason", "", Related(ObjectRef{}))
	require.EqualError(t, err, strings.Join([]string{
		`kube: EventRecorder.Record: the type "Bad" is neither Normal nor Warning`,
		`kube: EventRecorder.Record: the reason "reason" does not start with an upper-case ASCII letter: want CamelCase, such as ConfigMapMissing`,
		"kube: EventRecorder.Record: the related object (option 0) / /: has no APIVersion, such as apps/v1",
		"has no Kind, such as Deployment",
		"has no Name",
		"has no UID",
		"kube: EventRecorder.Record: the regarding object /ConfigMap /: has no APIVersion, such as apps/v1",
		"has no Name",
		"has no UID",
		`kube: EventRecorder.Record: the action is not named: outside a reconcile, name it with kube.Action, such as kube.Action("Admit")`,
		"kube: EventRecorder.Record: the EventRecorder is not one NewEventRecorder returned",
	}, "\n"))
}

func TestNewEventRecorder_checks(t *testing.T) {
	_, err := NewEventRecorder(nil, nil, EventRecorderSettings{Name: "Not A Name", Instance: strings.Repeat("i", 129)})
	require.ErrorContains(t, err, "kube: NewEventRecorder: the Setup is nil\nkube: NewEventRecorder: the Client is nil\nkube: NewEventRecorder: EventRecorderSettings.Name: ")
	require.ErrorContains(t, err, `kube: NewEventRecorder: EventRecorderSettings.Instance "iiii`)
	require.ErrorContains(t, err, `is 129 characters long: want from 1 to 128, such as the Pod's name`)
}
